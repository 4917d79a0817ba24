import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_PAIR } from "./lua-lib.ts";
import { sessionScriptKeys } from "./session-keys.ts";

/**
 * apply-drain: writes (or revokes) a client's operator drain and applies it to the client's
 * current record at once, so new placements skip the worker before its next heartbeat. A timed
 * drain bounds the lease by its deadline. Bumps the record's revision (`rev`), so a heartbeat
 * mirror still in flight with the undrained record cannot overwrite this one in the buckets.
 *
 * KEYS[1] drain      string: "cordon" or the deadline ms
 * KEYS[2] clients    hash clientId → account \n sessionId
 * KEYS[3] sessions   hash sessionId → record JSON
 * KEYS[4] session expiries  zset sessionId → expiry (the index over KEYS[3])
 * ARGV[1] clientId
 * ARGV[2] "cordon", a deadline ms, or "" to revoke
 * ARGV[3] key TTL ms (0: none)
 *
 * Returns {existed 0|1, record JSON or ""}.
 */
const LUA = `${LUA_PAIR}
local existed = redis.call('EXISTS', KEYS[1])
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
elseif tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
else
  redis.call('SET', KEYS[1], ARGV[2])
end
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if not owner then return {existed, ''} end
local _, sid = pair(owner)
local raw = redis.call('HGET', KEYS[3], sid)
if not raw then return {existed, ''} end
local rec = cjson.decode(raw)
rec.draining = rec.selfDraining or ARGV[2] ~= ''
if ARGV[2] ~= '' and ARGV[2] ~= 'cordon' and tonumber(ARGV[2]) < rec.expiry then rec.expiry = tonumber(ARGV[2]) end
rec.rev = (tonumber(rec.rev) or 0) + 1
local encoded = cjson.encode(rec)
redis.call('HSET', KEYS[3], sid, encoded)
redis.call('ZADD', KEYS[4], rec.expiry, sid)
return {existed, encoded}
`;

export const applyDrainScript = defineScript("apply-drain", LUA, "269fe24894bc8150d08cc162276cdfd8856d4c94");

export interface ApplyDrainInput {
  clientId: string;
  /** "cordon", a deadline (ms), or "" to revoke. */
  value: string;
  /** TTL of the drain key (ms), 0 for none. */
  ttlMs: number;
}

export interface ApplyDrainResult {
  /** Whether the client had a drain before. */
  existed: boolean;
  /** The client's record JSON as drained, "" when it has none. */
  json: string;
}

export async function applyDrain(redis: RedisPort, keys: Keys, input: ApplyDrainInput): Promise<ApplyDrainResult> {
  const { clientId, value, ttlMs } = input;
  const reply = await redis.run(applyDrainScript, sessionScriptKeys(keys, "apply-drain", { clientId }), [
    clientId,
    value,
    ttlMs,
  ]);
  const [existed, json] = reply as [number, string];
  return { existed: Number(existed) === 1, json };
}
