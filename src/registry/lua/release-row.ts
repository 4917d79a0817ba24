import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../../redis/port.ts";
import { releaseRowScriptCall } from "./scripts.generated.ts";

export interface ReleaseRowInput {
  bucket: number;
  env: string;
  ns: string;
  sessionId: string;
  id: string;
  /** The quoted epoch ("" quotes an epoch-less row); null or absent frees the session's row whatever its epoch. */
  epoch?: string | null;
}

/** Compare-and-delete of one placement row (lua/release-row-1.lua). */
export function releaseRowCall(keys: Keys, input: ReleaseRowInput): ScriptCall {
  const { bucket, env, ns, sessionId, id, epoch } = input;
  const placements = keys.placements(bucket, env, ns);
  return epoch == null
    ? releaseRowScriptCall({ placements }, { sessionId, id, epoch: "", anyEpoch: "1" })
    : releaseRowScriptCall({ placements }, { sessionId, id, epoch });
}

/** True when the row was deleted. */
export function parseReleaseRow(reply: RedisReply): boolean {
  return Number(reply) === 1;
}

export async function releaseRow(redis: RedisPort, keys: Keys, input: ReleaseRowInput): Promise<boolean> {
  return parseReleaseRow(await runCall(redis, releaseRowCall(keys, input)));
}
