/**
 * Judges a chaos run's history (history.ts): no acknowledged write lost or doubled, every read a
 * prefix of one order and never stale, epochs never going down, no two workers serving one key at
 * once, the user database fenced, counters exact; and how available and how quick to recover the
 * system was. `npm run chaos` prints summarize(verdict) (report.ts) and fails on any violation.
 */

import { checkAlarms } from "./check-alarms.ts";
import { checkCounters } from "./check-counters.ts";
import { checkClientEpochs, checkServed, checkUserDb } from "./check-epochs.ts";
import { checkLists } from "./check-lists.ts";
import { checkSockets } from "./check-sockets.ts";
import type { History } from "./history.ts";
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

export function checkHistory(history: History): Verdict {
  const log = new ViolationLog();
  checkLists(history.operations, history.finalReads, log);
  checkClientEpochs(history.operations, log);
  checkServed(history.served, log);
  checkUserDb(history.userDb, log);
  checkCounters(history.operations, log);
  if (history.sockets) checkSockets(history.sockets, log);
  if (history.alarms) checkAlarms(history.alarms, log);
  const { recovery, sloViolations } = measureRecovery(history, log);
  const accepted = history.userDb.filter((write) => write.accepted).length;
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
      userDb: { accepted, refused: history.userDb.length - accepted },
      served: history.served.length,
      keys: keys.size,
    },
  };
}
