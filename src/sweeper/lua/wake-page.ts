import type { Keys } from "../../redis/keys.ts";
import type { RedisPort, RedisReply } from "../../redis/port.ts";
import { wakePageScriptCall } from "./scripts.generated.ts";

export interface WakePage {
  bucket: number;
  /** `env \n ns \n id` of each id due for a wake, as the overwritten hash names it. */
  due: string[];
  /** The bucket has more to read before its scan comes round (its cursor is not back at 0, or the page was cut). */
  more: boolean;
}

/**
 * One page of each bucket's overwritten hash (lua/wake-page-3.lua), every bucket resuming at the
 * cursor its last page stored: one runMany, so one request on the REST adapter.
 */
export async function wakePages(
  redis: RedisPort,
  keys: Keys,
  input: { buckets: number[]; count: number; limit: number },
): Promise<WakePage[]> {
  const calls = input.buckets.map((b) =>
    wakePageScriptCall(
      { overwritten: keys.overwritten(b), wakes: keys.wakes(b), wakeCursor: keys.wakeCursor(b) },
      { count: input.count, limit: input.limit },
    ),
  );
  const replies = await redis.runMany(calls);
  return replies.map((reply, i) => parsePage(input.buckets[i] ?? 0, reply));
}

function parsePage(bucket: number, reply: RedisReply): WakePage {
  const [next, due, truncated] = (Array.isArray(reply) ? reply : []) as [RedisReply, RedisReply, RedisReply];
  return {
    bucket,
    due: Array.isArray(due) ? due.map(String) : [],
    more: String(next) !== "0" || Number(truncated) === 1,
  };
}
