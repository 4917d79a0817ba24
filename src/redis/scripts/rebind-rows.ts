import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";
import { LUA_PAIR, LUA_ROW } from "./lua-lib.ts";

/**
 * rebind-rows: re-binds placement rows of one bucket from one session to another, keeping their
 * epoch, atomic in the {bucket} slot. Register's reclaim of the instances a worker still holds
 * (prevSessionId → the new session, guarded by the bucket's mirror naming the new session) and
 * its undo when the register fails afterwards (the new session → prevSessionId, unguarded). One
 * call carries at most REBIND_CHUNK_IDS ids, so its Lua time stays a few milliseconds however many
 * ids a register names: a register sends as many calls as it needs.
 *
 * KEYS[1]       clients   hash clientId → sessionId \n generation (the bucket's mirror ordering)
 * KEYS[2 …]     placements hashes named by the pairs
 * ARGV[1] from: the session whose rows re-bind ("" re-binds nothing)
 * ARGV[2] to: the session they re-bind to
 * ARGV[3] guard: the clientId whose entry in KEYS[1] must name `to` for anything to re-bind
 *         (a newer registration of the client, or a tombstone, holds the bucket otherwise), or ""
 * ARGV[4 …] pairs: index into KEYS of a placements hash, id
 *
 * Returns {duplicates: index, id…, re-bound rows carrying a wind-down expiry: index, id, expiry…}.
 * A duplicate is an id neither re-bound nor already owned by `to`.
 */
const LUA = `${LUA_PAIR}${LUA_ROW}
local from, to, guard = ARGV[1], ARGV[2], ARGV[3]
local live = from ~= ''
if live and guard ~= '' then
  local cur = redis.call('HGET', KEYS[1], guard)
  live = cur and pair(cur) == to
end

local dups, requeue = {}, {}
for i = 4, #ARGV, 2 do
  local kidx, id = tonumber(ARGV[i]), ARGV[i + 1]
  local raw = redis.call('HGET', KEYS[kidx], id)
  local row = raw and row_decode(raw)
  if live and row and row.sid == from then
    row.sid = to
    redis.call('HSET', KEYS[kidx], id, row_encode(row))
    if row.expiry ~= '' then
      requeue[#requeue + 1] = tostring(kidx); requeue[#requeue + 1] = id; requeue[#requeue + 1] = row.expiry
    end
  elseif not (row and row.sid == to) then
    dups[#dups + 1] = tostring(kidx); dups[#dups + 1] = id
  end
end
return {dups, requeue}
`;

export const rebindRowsScript = defineScript("rebind-rows", LUA, "c1f4ea602c7de5968616ba517543a06cc50b6ec5");

/** The most ids one rebind-rows call carries (a few milliseconds of Lua: two commands per id). */
export const REBIND_CHUNK_IDS = 2000;

export interface RebindRowsInput {
  /** The session whose rows re-bind ("" re-binds nothing: every id not owned by `to` is a duplicate). */
  from: string;
  to: string;
  /** The clientId whose bucket mirror must name `to`, or "" for no guard. */
  guardClientId: string;
  /** The rows, in any buckets, each with the env of its namespace. */
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>;
}

/** A rebind-rows call, with the namespace of each placements hash it names (KEYS[2] on). */
export interface RebindRowsCall extends ScriptCall {
  readonly placementNs: readonly string[];
}

export interface RebindRowsResult {
  duplicates: Array<{ ns: string; id: string }>;
  /** Re-bound rows that carry a wind-down expiry (ms). */
  windDowns: Array<{ ns: string; id: string; deadlineAt: number }>;
}

/** The calls for `rows`: grouped by bucket, at most REBIND_CHUNK_IDS ids each. Linear in the rows. */
export function rebindRowsCalls(keys: Keys, input: RebindRowsInput): RebindRowsCall[] {
  const byBucket = new Map<number, Array<{ env: string; ns: string; id: string }>>();
  for (const row of input.rows) {
    const bucket = keys.bucketOf(row.id);
    let list = byBucket.get(bucket);
    if (!list) byBucket.set(bucket, (list = []));
    list.push(row);
  }
  const calls: RebindRowsCall[] = [];
  for (const [bucket, rows] of byBucket) {
    for (let start = 0; start < rows.length; start += REBIND_CHUNK_IDS) {
      calls.push(chunkCall(keys, input, bucket, rows.slice(start, start + REBIND_CHUNK_IDS)));
    }
  }
  return calls;
}

function chunkCall(keys: Keys, input: RebindRowsInput, bucket: number, rows: ReadonlyArray<{ env: string; ns: string; id: string }>): RebindRowsCall {
  const callKeys = [keys.clients(bucket)];
  const placementNs: string[] = [];
  const indexOf = new Map<string, number>();
  const pairs: (string | number)[] = [];
  for (const { env, ns, id } of rows) {
    const key = keys.placements(bucket, env, ns);
    let index = indexOf.get(key);
    if (index === undefined) {
      index = callKeys.push(key);
      indexOf.set(key, index);
      placementNs.push(ns);
    }
    pairs.push(index, id);
  }
  return { script: rebindRowsScript, keys: callKeys, args: [input.from, input.to, input.guardClientId, ...pairs], placementNs };
}

export function parseRebindRows(reply: RedisReply, call: RebindRowsCall): RebindRowsResult {
  const [dups = [], rebound = []] = reply as [string[]?, string[]?];
  const nsOf = (kidx: number) => call.placementNs[kidx - 2] ?? "";
  const duplicates: RebindRowsResult["duplicates"] = [];
  for (let j = 0; j < dups.length; j += 2) duplicates.push({ ns: nsOf(Number(dups[j])), id: dups[j + 1]! });
  const windDowns: RebindRowsResult["windDowns"] = [];
  for (let j = 0; j < rebound.length; j += 3) {
    windDowns.push({ ns: nsOf(Number(rebound[j])), id: rebound[j + 1]!, deadlineAt: Number(rebound[j + 2]) });
  }
  return { duplicates, windDowns };
}
