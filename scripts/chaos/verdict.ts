/**
 * What the checker (checker.ts) concludes about a chaos run's history: the violations of the
 * properties Pinboard promises, the recovery SLO, and the statistics the report draws.
 */

import type { Fault, Operation } from "./history.ts";
import type { Layer } from "./layers.ts";

export type ViolationKind =
  | "lost-append"
  | "duplicated-append"
  | "failed-append-visible"
  | "phantom-value"
  | "missing-final-read"
  | "non-prefix-read"
  | "stale-read"
  | "epoch-regression"
  | "split-brain"
  | "user-db-stale-write"
  | "counter-regression"
  | "duplicate-counter-answer"
  | "lost-increment"
  | "duplicated-increment"
  | "never-recovered"
  | "zombie-read"
  | "shared-epoch-write"
  | "spurious-fence-refusal"
  | "unlogged-answer"
  | "store-lost-append"
  | "store-duplicated-value"
  | "store-phantom-value"
  | "store-final-read-mismatch"
  | "store-counter-out-of-range"
  | "socket-stale-delivery"
  | "socket-duplicate-delivery"
  | "socket-duplicate-answer"
  | "socket-unlogged-answer"
  | "socket-epoch-regression"
  | "alarm-lost"
  | "alarm-refired"
  | "alarm-split-fire"
  | "alarm-stale-fire";

export interface Violation {
  kind: ViolationKind;
  key: string;
  /** A sentence naming the operation ids, workers and epochs involved. */
  detail: string;
  /** The ids of the operations involved, when operations are. */
  operations?: number[];
  workers?: string[];
  epochs?: string[];
}

/** A fault-key whose owner was killed or paused and that took longer than lease + 2 s to be served again. */
export interface SloViolation {
  kind: "slow-recovery";
  key: string;
  fault: Pick<Fault, "kind" | "target" | "start">;
  recoveryMs: number;
  limitMs: number;
  detail: string;
}

export type OutcomeCounts = Record<Operation["outcome"], number>;

export interface SecondAvailability {
  /** Whole seconds since history.started. */
  second: number;
  ok: number;
  total: number;
  /** ok / total, or null when no operation ended in that second. */
  ratio: number | null;
}

export interface KeyRecovery {
  key: string;
  /** From the fault's start to the end of the first ok operation on the key started after it; null: never. */
  recoveryMs: number | null;
}

export interface FaultRecovery {
  kind: Fault["kind"];
  target: string;
  start: number;
  healed: number;
  keys: KeyRecovery[];
  /** The slowest of its keys; null when one never recovered or it had none. */
  maxMs: number | null;
}

export interface Statistics {
  operations: { total: number; byKind: Record<Operation["kind"], OutcomeCounts>; byOutcome: OutcomeCounts };
  faults: { total: number; byKind: Partial<Record<Fault["kind"], number>> };
  availability: SecondAvailability[];
  recovery: {
    perFault: FaultRecovery[];
    /** Over every fault-key that recovered. */
    measured: number;
    p50Ms: number | null;
    p99Ms: number | null;
    maxMs: number | null;
    /** lease TTL + 2 s. */
    limitMs: number;
  };
  /** Writes the user database took and refused; a refusal is the epoch fence working. */
  userDb: { accepted: number; refused: number };
  /** The protection layers kept on, and how often each refused (the workers' layer logs). */
  layers?: { on: Layer[]; refusals: Record<Layer, number> };
  served: number;
  keys: number;
}

export interface Verdict {
  /** No violation (the SLO is judged apart: sloMet). */
  valid: boolean;
  /** At most MAX_VIOLATIONS_PER_KIND of each kind; violationCounts counts them all. */
  violations: Violation[];
  violationCounts: Partial<Record<ViolationKind, number>>;
  sloMet: boolean;
  sloViolations: SloViolation[];
  stats: Statistics;
}

export const MAX_VIOLATIONS_PER_KIND = 200;

/** Collects violations, keeping the first MAX_VIOLATIONS_PER_KIND of each kind and counting all. */
export class ViolationLog {
  readonly kept: Violation[] = [];
  readonly counts: Partial<Record<ViolationKind, number>> = {};

  add(violation: Violation): void {
    const count = (this.counts[violation.kind] ?? 0) + 1;
    this.counts[violation.kind] = count;
    if (count <= MAX_VIOLATIONS_PER_KIND) this.kept.push(violation);
  }
}
