/** The run's counts: operations by kind and outcome, faults by kind, availability second by second. */

import type { Fault, History, Operation } from "./history.ts";
import type { OutcomeCounts, SecondAvailability, Statistics } from "./verdict.ts";

const KINDS: Operation["kind"][] = ["append", "read", "incr"];

export function countOperations(operations: readonly Operation[]): Statistics["operations"] {
  const byKind = Object.fromEntries(KINDS.map((kind) => [kind, noOutcomes()])) as Record<
    Operation["kind"],
    OutcomeCounts
  >;
  const byOutcome = noOutcomes();
  for (const op of operations) {
    byKind[op.kind][op.outcome]++;
    byOutcome[op.outcome]++;
  }
  return { total: operations.length, byKind, byOutcome };
}

function noOutcomes(): OutcomeCounts {
  return { ok: 0, fail: 0, info: 0 };
}

export function countFaults(faults: readonly Fault[]): Statistics["faults"] {
  const byKind: Partial<Record<Fault["kind"], number>> = {};
  for (const fault of faults) byKind[fault.kind] = (byKind[fault.kind] ?? 0) + 1;
  return { total: faults.length, byKind };
}

/**
 * For each whole second of the run, the share of the operations that ended in it that were ok. An
 * operation ending outside the run's span counts in the first or last second.
 */
export function availabilityPerSecond(
  history: Pick<History, "operations" | "started" | "ended">,
): SecondAvailability[] {
  const seconds = Math.max(1, Math.ceil((history.ended - history.started) / 1000));
  const ok = new Array<number>(seconds).fill(0);
  const total = new Array<number>(seconds).fill(0);
  for (const op of history.operations) {
    const second = Math.min(seconds - 1, Math.max(0, Math.floor((op.end - history.started) / 1000)));
    total[second]!++;
    if (op.outcome === "ok") ok[second]!++;
  }
  return total.map((count, second) => ({
    second,
    ok: ok[second]!,
    total: count,
    ratio: count === 0 ? null : ok[second]! / count,
  }));
}
