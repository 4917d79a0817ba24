import type { AppDeps } from "../deps/app-deps.ts";
import { type OwnerTally, parseSpreadSlice, spreadSliceCall } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type SpreadCountDeps = Pick<AppDeps, "redis" | "keys">;

/**
 * The spread count behind GET /registry/spread: the rows of some placement spaces counted
 * by owner inside Redis (lua/spread-slice-1.lua), so no row crosses the wire. Each script call
 * looks at about `rowsPerCall` rows of one space (a few milliseconds of Redis time; other
 * clients run between calls); a round trip sends the next call of up to `callsPerRound` spaces
 * at once (one POST /pipeline on the REST adapter). A spread count stops at its budget and says it is
 * not complete: its counts then cover only the rows looked at.
 */
export const SPREAD_COUNT_BUDGET = {
  /** Rows one script call looks at, about (its last HSCAN page may pass it by `scanCount`). */
  rowsPerCall: 10_000,
  /** HSCAN's COUNT inside the script. */
  scanCount: 1000,
  /** Spaces whose next slice one round trip counts. */
  callsPerRound: 64,
  /** Round trips one spread count waits on (on Workers: subrequests, of the Free plan's 50). */
  roundTrips: 16,
  /** Rows looked at in all: no round trip starts past this many. */
  rows: 2_000_000,
} as const;

/** A placements hash: (env, ns) in one bucket. */
export interface Space {
  bucket: number;
  env: string;
  ns: string;
}

/** The rows of one owner (or, with sessionId "", rows not placed) in one space. */
export type SpaceTally = Space & OwnerTally;

export interface SpreadCount {
  /** Every space was counted to its end. */
  complete: boolean;
  /** Rows looked at. */
  scanned: number;
  tallies: SpaceTally[];
}

/** Every placement space of every bucket, as the buckets' `spaces` sets list them: one round trip. */
export async function listSpaces(deps: SpreadCountDeps): Promise<Space[]> {
  const { keys, redis } = deps;
  const lists = await Promise.all(keys.allBuckets().map((bucket) => redis.smembers(keys.spaces(bucket))));
  return lists.flatMap((members, bucket) =>
    members.map((member) => {
      const [env = "", ns = ""] = member.split("\n");
      return { bucket, env, ns };
    }),
  );
}

/** Counts the rows of `spaces` by owner, within SPREAD_COUNT_BUDGET. */
export async function countSpread(deps: SpreadCountDeps, spaces: readonly Space[]): Promise<SpreadCount> {
  const { keys, redis } = deps;
  let pending = spaces.map((space) => ({ ...space, cursor: "0" }));
  const tallies: SpaceTally[] = [];
  let rounds = 0;
  let scanned = 0;
  while (pending.length > 0 && rounds < SPREAD_COUNT_BUDGET.roundTrips && scanned < SPREAD_COUNT_BUDGET.rows) {
    rounds++;
    const batch = pending.slice(0, SPREAD_COUNT_BUDGET.callsPerRound);
    const replies = await redis.runMany(
      batch.map((space) =>
        spreadSliceCall(keys, {
          ...space,
          budget: SPREAD_COUNT_BUDGET.rowsPerCall,
          count: SPREAD_COUNT_BUDGET.scanCount,
        }),
      ),
    );
    const ended = new Set<(typeof pending)[number]>();
    batch.forEach((space, i) => {
      const slice = parseSpreadSlice(replies[i]!);
      scanned += slice.scanned;
      for (const owner of slice.owners) tallies.push({ bucket: space.bucket, env: space.env, ns: space.ns, ...owner });
      space.cursor = slice.next;
      if (slice.next === "0") ended.add(space);
    });
    // Spaces counted to their end leave; the others go on from their cursor, after the ones not begun.
    pending = [...pending.slice(batch.length), ...batch.filter((space) => !ended.has(space))];
  }
  return { complete: pending.length === 0, scanned, tallies };
}
