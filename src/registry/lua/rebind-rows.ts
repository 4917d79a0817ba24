import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { rebindRowsScriptCall } from "./scripts.generated.ts";

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

/**
 * The rebind-rows calls (lua/rebind-rows-1.lua) for `rows`: grouped by bucket, at most
 * REBIND_CHUNK_IDS ids each. Linear in the rows.
 */
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
  const { placements, placementNs, pairs } = rebindPairs(keys, bucket, rows, 1);
  const call = rebindRowsScriptCall(
    { clients: keys.clients(bucket), placements },
    { from: input.from, to: input.to, guard: input.guardClientId, pairs },
  );
  return { ...call, placementNs, headLength: 1 };
}

/**
 * The placements hashes `rows` name (KEYS after the call's first `headLength`), the namespace of
 * each, and the pairs (KEYS index, id) of includes/rebind-rows.lua; linear in the rows.
 */
export function rebindPairs(
  keys: Keys,
  bucket: number,
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>,
  headLength: number,
): { placements: string[]; placementNs: string[]; pairs: (string | number)[] } {
  const placements: string[] = [];
  const placementNs: string[] = [];
  const indexOf = new Map<string, number>();
  const pairs: (string | number)[] = [];
  for (const { env, ns, id } of rows) {
    const key = keys.placements(bucket, env, ns);
    let index = indexOf.get(key);
    if (index === undefined) {
      index = headLength + placements.push(key);
      indexOf.set(key, index);
      placementNs.push(ns);
    }
    pairs.push(index, id);
  }
  return { placements, placementNs, pairs };
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
