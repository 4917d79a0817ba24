import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { tagRowScriptCall } from "./scripts.generated.ts";

export interface TagRowInput {
  bucket: number;
  env: string;
  ns: string;
  sessionId: string;
  id: string;
  /** The quoted epoch (digits). */
  epoch: string;
  tag: string;
}

/** Compare-and-set of a placement's owner tag (lua/tag-row-1.lua); true when the row was tagged. */
export async function tagRow(redis: RedisPort, keys: Keys, input: TagRowInput): Promise<boolean> {
  const { bucket, env, ns, sessionId, id, epoch, tag } = input;
  const call = tagRowScriptCall({ placements: keys.placements(bucket, env, ns) }, { sessionId, id, epoch, tag });
  return Number(await runCall(redis, call)) === 1;
}
