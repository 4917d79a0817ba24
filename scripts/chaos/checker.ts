/**
 * Judges a chaos run's history (history.ts): no acknowledged write lost or doubled, every read a
 * prefix of one order and never stale, epochs never going down, no two workers serving one key at
 * once, the user database fenced (and refusing only what it must), counters exact, every answer in
 * its worker's log, the stores as read from Redis agreeing with all that; and how available and how quick to recover the
 * system was. `npm run chaos` prints summarize(verdict) (report.ts) and fails on any violation.
 */

import { checkAlarms } from "./check-alarms.ts";
import { checkCounters } from "./check-counters.ts";
import { checkClientEpochs, checkServed, checkUserDb } from "./check-epochs.ts";
import { checkFenceRefusals } from "./check-fences.ts";
import { checkLists } from "./check-lists.ts";
import { checkAnswersLogged } from "./check-served-log.ts";
import { checkSockets } from "./check-sockets.ts";
import { checkStores } from "./check-stores.ts";
import type { History } from "./history.ts";
import { countRefusals } from "./layers.ts";
import { measureRecovery } from "./recovery.ts";
import { availabilityPerSecond, countFaults, countOperations } from "./statistics.ts";
import { type Verdict, ViolationLog } from "./verdict.ts";

export type {
  FaultRecovery,
  KeyRecovery,
  SecondAvailability,
  SloViolation,
  Statistics,
  Verdict,
  Violation,
  ViolationKind,
} from "./verdict.ts";

/** A key never served at the end; checkLists already names a list with acknowledged appends. */
function checkUnserved(history: History, log: ViolationLog): void {
  for (const key of history.unserved ?? []) {
    if (history.operations.some((op) => op.key === key && op.kind === "append" && op.outcome === "ok")) continue;
    log.add({ kind: "missing-final-read", key, detail: `the final read of ${key} was never served` });
  }
}

export function checkHistory(history: History): Verdict {
  const log = new ViolationLog();
  checkLists(history.operations, history.finalReads, log);
  checkUnserved(history, log);
  checkClientEpochs(history.operations, log);
  checkServed(history.served, log);
  checkUserDb(history.userDb, log);
  checkCounters(history.operations, log);
  checkFenceRefusals(history.userDb, log);
  if (history.answersLogged) checkAnswersLogged(history.operations, history.served, log);
  if (history.stored) checkStores(history.operations, history.finalReads, history.stored, log);
  if (history.sockets) checkSockets(history.sockets, log);
  if (history.alarms) checkAlarms(history.alarms, log);
  const { recovery, sloViolations } = measureRecovery(history, log);
  const accepted = history.userDb.filter((write) => write.accepted).length;
  const refused = history.userDb.filter((write) => !write.accepted && write.error === undefined).length;
  const layers = history.layers ? { on: history.layers, refusals: countRefusals(history.refusals ?? []) } : undefined;
  const keys = new Set([...history.operations.map((op) => op.key), ...Object.keys(history.finalReads)]);
  return {
    valid: log.kept.length === 0,
    violations: log.kept,
    violationCounts: log.counts,
    sloMet: sloViolations.length === 0,
    sloViolations,
    stats: {
      operations: countOperations(history.operations),
      faults: countFaults(history.faults),
      availability: availabilityPerSecond(history),
      recovery,
      userDb: { accepted, refused },
      ...(layers ? { layers } : {}),
      served: history.served.length,
      keys: keys.size,
    },
  };
}
