import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../port.ts";
import { LUA_ROW } from "./lua-lib.ts";

/**
 * release-row: compare-and-delete of one placement row. The row is freed only while its
 * sessionId matches and its epoch equals the quoted one ("" quotes an epoch-less row); a release
 * that quotes no epoch at all (ARGV[4] "1") frees the session's row whatever its epoch.
 *
 * KEYS[1] placements   hash id → row
 * ARGV[1] sessionId
 * ARGV[2] id
 * ARGV[3] quoted epoch (digits, or ""); ignored when ARGV[4] is "1"
 * ARGV[4] "1" when no epoch was quoted (absent: compare the epoch)
 *
 * Returns 1 when the row was deleted, else 0.
 */
const LUA = `${LUA_ROW}
local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return 0 end
local row = row_decode(raw)
if row.sid ~= ARGV[1] then return 0 end
if ARGV[4] ~= '1' and row.epoch ~= ARGV[3] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[2])
`;

export const releaseRowScript = defineScript("release-row", LUA, "02304a621e7ade65fbaf147e20c201e3b28ed818");

export interface ReleaseRowInput {
  bucket: number;
  env: string;
  ns: string;
  sessionId: string;
  id: string;
  /** The quoted epoch ("" quotes an epoch-less row); null or absent frees the session's row whatever its epoch. */
  epoch?: string | null;
}

export function releaseRowCall(keys: Keys, input: ReleaseRowInput): ScriptCall {
  const { bucket, env, ns, sessionId, id, epoch } = input;
  const args = epoch == null ? [sessionId, id, "", "1"] : [sessionId, id, epoch];
  return { script: releaseRowScript, keys: [keys.placements(bucket, env, ns)], args };
}

/** True when the row was deleted. */
export function parseReleaseRow(reply: RedisReply): boolean {
  return Number(reply) === 1;
}

export async function releaseRow(redis: RedisPort, keys: Keys, input: ReleaseRowInput): Promise<boolean> {
  const call = releaseRowCall(keys, input);
  return parseReleaseRow(await redis.run(call.script, call.keys, call.args));
}
