import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { zremIfScoreScriptCall } from "./scripts.generated.ts";

export interface ZremIfScoreInput {
  /** The sorted set (not one of keys.ts: the durability index's due alarms, say). */
  key: string;
  member: string;
  /** The score as read. */
  score: number;
}

/** Removes a sorted-set member only while its score is the one read (lua/zrem-if-score-1.lua); true when removed. */
export async function zremIfScore(redis: RedisPort, input: ZremIfScoreInput): Promise<boolean> {
  const call = zremIfScoreScriptCall({ zset: input.key }, { member: input.member, score: input.score });
  return Number(await runCall(redis, call)) === 1;
}
