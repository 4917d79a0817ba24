import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";
import { LUA_NOW, LUA_ROW } from "./lua-lib.ts";

/**
 * wind-down-rows: stamps (or clears) the wind-down expiry of the named placement rows of one
 * bucket, each a compare-and-set on the owner it was judged by: a row is stamped only while its
 * sessionId and hostname are still the ones the caller read (and judged the operator's scope
 * on). The fence lives on the row, so it survives the owner's death and binds a replacement
 * owner. Only the ids passed are ever touched: there is no "every row" form, so a caller cannot
 * stamp a row it did not judge.
 *
 * KEYS[1] placements   hash id → row
 * KEYS[2] workers      hash sessionId → record JSON (the bucket's mirrors: owner liveness)
 * ARGV[1] "read", or the deadline ms, or "" to clear the wind-down
 * ARGV[2 …] triples: id, expected sessionId, expected hostname
 *
 * "read" stamps nothing and returns a flat {id, sessionId, hostname, …} of every row, for the
 * caller to judge (one script so that a namespace-wide wind-down reads every bucket in one
 * round trip through runMany).
 *
 * Otherwise returns a flat {id, outcome, …} for every id that was not simply gone:
 *   "notify"  stamped, and its owner is to be told: the row has an epoch (not a placeholder),
 *             its owner is live (mirror expiry > now) and its previous fence had not passed;
 *   "stamped" stamped, no message (dead owner, placeholder row, fence already past);
 *   "changed" not stamped: the row's owner or hostname changed since the caller read it.
 * A missing row is left out.
 */
const LUA = `${LUA_NOW}${LUA_ROW}
local out = {}
if ARGV[1] == 'read' then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local row = row_decode(all[i + 1])
    out[#out + 1] = all[i]
    out[#out + 1] = row.sid
    out[#out + 1] = row.host
  end
  return out
end
local now = now_ms()
for i = 2, #ARGV, 3 do
  local id, sid, host = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local row = row_decode(raw)
    if row.sid ~= sid or row.host ~= host then
      out[#out + 1] = id
      out[#out + 1] = 'changed'
    else
      local passed = row.expiry ~= '' and tonumber(row.expiry) <= now
      local live = false
      if row.epoch ~= '' and row.sid ~= '' then
        local w = redis.call('HGET', KEYS[2], row.sid)
        live = w ~= false and cjson.decode(w).expiry > now
      end
      row.expiry = ARGV[1]
      redis.call('HSET', KEYS[1], id, row_encode(row))
      out[#out + 1] = id
      out[#out + 1] = (live and not passed) and 'notify' or 'stamped'
    end
  end
end
return out
`;

export const windDownRowsScript = defineScript("wind-down-rows", LUA, "d7f205a6c08b5a9a65567b0e6f4030bb7812e9d6");

/** The placements hash of one (env, ns) in one bucket. */
export interface WindDownRowsInput {
  bucket: number;
  env: string;
  ns: string;
}

/** A row as judged: its id, its owner's sessionId and the hostname it carries. */
export interface WindDownRow {
  id: string;
  sessionId: string;
  hostname: string;
}

export interface WindDownRowsStampInput extends WindDownRowsInput {
  /** The deadline (ms), or "" to clear the wind-down. */
  stamp: string;
  rows: readonly WindDownRow[];
}

export type WindDownOutcome = "notify" | "stamped" | "changed";

function rowsKeys(keys: Keys, { bucket, env, ns }: WindDownRowsInput): string[] {
  return [keys.placements(bucket, env, ns), keys.workers(bucket)];
}

/** The "read" form: every row of the hash, stamping nothing. */
export function windDownRowsReadCall(keys: Keys, input: WindDownRowsInput): ScriptCall {
  return { script: windDownRowsScript, keys: rowsKeys(keys, input), args: ["read"] };
}

export function parseWindDownRowsRead(reply: RedisReply): WindDownRow[] {
  const flat = (reply ?? []) as string[];
  const rows: WindDownRow[] = [];
  for (let i = 0; i + 2 < flat.length; i += 3)
    rows.push({ id: flat[i]!, sessionId: flat[i + 1]!, hostname: flat[i + 2]! });
  return rows;
}

/** Stamps the rows, each a compare-and-set on the owner and hostname it was judged by. */
export function windDownRowsStampCall(keys: Keys, input: WindDownRowsStampInput): ScriptCall {
  const args: string[] = [input.stamp];
  for (const row of input.rows) args.push(row.id, row.sessionId, row.hostname);
  return { script: windDownRowsScript, keys: rowsKeys(keys, input), args };
}

/** The outcome of every id that was not simply gone, in reply order. */
export function parseWindDownRowsStamp(reply: RedisReply): Array<[id: string, outcome: WindDownOutcome]> {
  const flat = reply as string[];
  const out: Array<[string, WindDownOutcome]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]! as WindDownOutcome]);
  return out;
}
