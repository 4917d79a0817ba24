import type { AppDeps } from "../deps/app-deps.ts";
import { parseReadSpent, readSpentCall } from "./lua/index.ts";
import type { WorkerRecord } from "./record.ts";

/** What this module uses of the app's dependencies. */
export type HeadroomDeps = Pick<AppDeps, "redis" | "keys">;

/**
 * The record's headroom is replaced by each heartbeat and decremented by each new placement until
 * the next one. A placement can only write its own bucket's slot, so the decrements are counted
 * per bucket (keys.ts `spent`: `headroomRev \n count` per session, written by the resolve script)
 * and summed here when a record is read. A count kept under another headroom revision than the
 * record's belongs to a headroom that a heartbeat has since replaced, and counts for nothing.
 */

export const headroomRevOf = (record: Pick<WorkerRecord, "headroomRev">): number => record.headroomRev ?? 0;

/** The count in a stored `headroomRev \n count`, when it was kept under `rev`; else 0. */
function countUnder(raw: string | undefined, rev: number): number {
  if (!raw) return 0;
  const nl = raw.indexOf("\n");
  if (nl < 0 || Number(raw.slice(0, nl)) !== rev) return 0;
  const count = Number(raw.slice(nl + 1));
  return Number.isFinite(count) ? count : 0;
}

/** Every bucket's spent counts (index = bucket), read in one pipeline. */
async function spentHashes(deps: HeadroomDeps): Promise<Array<Record<string, string>>> {
  const { keys, redis } = deps;
  const replies = await redis.runMany(keys.allBuckets().map((bucket) => readSpentCall(keys, { bucket })));
  return replies.map(parseReadSpent);
}

/** One session's new placements per bucket (index = bucket) under its current headroom revision. */
export async function spentPerBucket(deps: HeadroomDeps, record: WorkerRecord): Promise<number[]> {
  const rev = headroomRevOf(record);
  return (await spentHashes(deps)).map((counts) => countUnder(counts[record.sessionId], rev));
}

/** The records with `headroom` less every new placement since their headroom was last replaced. */
export async function withSpentHeadroom(deps: HeadroomDeps, records: WorkerRecord[]): Promise<WorkerRecord[]> {
  if (records.length === 0) return records;
  const revs = new Map(records.map((r) => [r.sessionId, headroomRevOf(r)]));
  const spent = new Map<string, number>();
  for (const counts of await spentHashes(deps)) {
    for (const [sessionId, raw] of Object.entries(counts)) {
      const rev = revs.get(sessionId);
      if (rev !== undefined) spent.set(sessionId, (spent.get(sessionId) ?? 0) + countUnder(raw, rev));
    }
  }
  return records.map((r) => {
    const n = spent.get(r.sessionId) ?? 0;
    return n === 0 ? r : { ...r, headroom: r.headroom - n };
  });
}
