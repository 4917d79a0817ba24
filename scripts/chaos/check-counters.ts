/**
 * The counter checks (kind "incr"): each acknowledged increment answers a value no other one
 * answered, larger than any value acknowledged before it started (a read: no smaller); the final
 * counter lies between the acknowledged increments and those plus the indeterminate ones.
 */

import type { Operation } from "./history.ts";
import { groupByKey, sweepAcknowledged } from "./real-time.ts";
import type { ViolationLog } from "./verdict.ts";

interface CounterValue extends Operation {
  counter: number;
}

export function checkCounters(operations: readonly Operation[], log: ViolationLog): void {
  const byKey = groupByKey(operations);
  for (const [key, ops] of byKey) {
    const incrs = ops.filter((op) => op.kind === "incr");
    if (incrs.length === 0) continue;
    const values = ops.filter(
      (op): op is CounterValue =>
        op.outcome === "ok" && op.counter !== undefined && (op.kind === "incr" || op.kind === "read"),
    );
    checkDuplicateAnswers(key, values, log);
    checkRegressions(key, values, log);
    checkFinalCounter(key, incrs, values, log);
  }
}

function checkDuplicateAnswers(key: string, values: CounterValue[], log: ViolationLog): void {
  const byAnswer = new Map<number, CounterValue[]>();
  for (const op of values) {
    if (op.kind !== "incr") continue;
    const same = byAnswer.get(op.counter);
    if (same === undefined) byAnswer.set(op.counter, [op]);
    else same.push(op);
  }
  for (const [answer, ops] of byAnswer) {
    if (ops.length < 2) continue;
    const ids = ops.map((op) => op.id);
    const detail = `incr ops ${ids.join(", ")} of ${key} all answered ${answer} (workers ${ops.map((op) => op.worker ?? "?").join(", ")}): an increment was lost`;
    log.add({ kind: "duplicate-counter-answer", key, detail, operations: ids });
  }
}

function checkRegressions(key: string, values: CounterValue[], log: ViolationLog): void {
  sweepAcknowledged(
    values,
    values,
    (a, b) => a.counter > b.counter,
    (later, highest) => {
      if (highest === undefined) return;
      const bothIncr = later.kind === "incr" && highest.kind === "incr";
      const least = highest.counter + (later.kind === "incr" ? 1 : 0);
      // Two increments answering one value are reported once, as a duplicate answer.
      if (later.counter >= least || (bothIncr && later.counter === highest.counter)) return;
      const detail = `${later.kind} op ${later.id} of ${key} (started ${later.start}, worker ${later.worker ?? "?"}) answered ${later.counter} after ${highest.kind} op ${highest.id} (ended ${highest.end}, worker ${highest.worker ?? "?"}) answered ${highest.counter}`;
      log.add({ kind: "counter-regression", key, detail, operations: [highest.id, later.id] });
    },
  );
}

function checkFinalCounter(key: string, incrs: Operation[], values: CounterValue[], log: ViolationLog): void {
  if (values.length === 0) return;
  // The counter only grows, so the largest value anyone was told is the best view of its end state
  // (normally the last read, after every fault healed).
  const last = values.reduce((a, b) => (b.counter > a.counter || (b.counter === a.counter && b.end > a.end) ? b : a));
  const ok = incrs.filter((op) => op.outcome === "ok").length;
  const info = incrs.filter((op) => op.outcome === "info").length;
  const counts = `${ok} acknowledged and ${info} indeterminate incrs`;
  if (last.counter < ok)
    log.add({
      kind: "lost-increment",
      key,
      detail: `counter ${key} ends at ${last.counter} (${last.kind} op ${last.id}) after ${counts}`,
      operations: [last.id],
    });
  if (last.counter > ok + info)
    log.add({
      kind: "duplicated-increment",
      key,
      detail: `counter ${key} ends at ${last.counter} (${last.kind} op ${last.id}) after only ${counts}`,
      operations: [last.id],
    });
}
