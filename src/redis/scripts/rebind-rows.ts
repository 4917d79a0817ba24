import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";
import { LUA_PAIR, LUA_REBIND_ROWS, LUA_ROW } from "./lua-lib.ts";

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
const LUA = `${LUA_PAIR}${LUA_ROW}${LUA_REBIND_ROWS}
local from, to, guard = ARGV[1], ARGV[2], ARGV[3]
local live = from ~= ''
if live and guard ~= '' then
  local cur = redis.call('HGET', KEYS[1], guard)
  live = cur and pair(cur) == to
end
local dups, requeue = rebind_rows(from, to, live, 4)
return {dups, requeue}
`;

export const rebindRowsScript = defineScript("rebind-rows", LUA, "49997b4520dab72f994a47fe84fb86db79c6c619");

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

/** A call that re-binds rows, with the namespace of each placements hash it names (after headLength keys). */
export interface RebindRowsCall extends ScriptCall {
  readonly placementNs: readonly string[];
  readonly headLength: number;
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

function chunkCall(
  keys: Keys,
  input: RebindRowsInput,
  bucket: number,
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>,
): RebindRowsCall {
  const callKeys = [keys.clients(bucket)];
  const { placementNs, pairs } = rebindPairs(keys, bucket, rows, callKeys);
  return {
    script: rebindRowsScript,
    keys: callKeys,
    args: [input.from, input.to, input.guardClientId, ...pairs],
    placementNs,
    headLength: 1,
  };
}

/**
 * The placements hashes `rows` name, appended to `callKeys`, and the pairs (KEYS index, id) of
 * LUA_REBIND_ROWS; linear in the rows.
 */
export function rebindPairs(
  keys: Keys,
  bucket: number,
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>,
  callKeys: string[],
): { placementNs: string[]; pairs: (string | number)[] } {
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
  return { placementNs, pairs };
}

/** What a rebind-rows call, or the rebind part of a register-bucket call, came to. */
export function parseRebindRows(reply: RedisReply, call: RebindRowsCall): RebindRowsResult {
  const [dups = [], rebound = []] = reply as [string[]?, string[]?];
  const nsOf = (kidx: number) => call.placementNs[kidx - call.headLength - 1] ?? "";
  const duplicates: RebindRowsResult["duplicates"] = [];
  for (let j = 0; j < dups.length; j += 2) duplicates.push({ ns: nsOf(Number(dups[j])), id: dups[j + 1]! });
  const windDowns: RebindRowsResult["windDowns"] = [];
  for (let j = 0; j < rebound.length; j += 3) {
    windDowns.push({ ns: nsOf(Number(rebound[j])), id: rebound[j + 1]!, deadlineAt: Number(rebound[j + 2]) });
  }
  return { duplicates, windDowns };
}
