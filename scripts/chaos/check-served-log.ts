/**
 * Every answer a client got from a worker is in that worker's served log: the log is written
 * synchronously before the answer leaves (sync-log.ts), so even a worker killed -9 right after
 * answering has the line. Matched by (worker, key, epoch, kind): the n-th answer of a group to
 * end needs n served lines of the group logged by then. An answer without its line ("unlogged
 * answer") means the log lost lines (written asynchronously), or something else answered.
 */

import type { Operation, Served } from "./history.ts";
import type { ViolationLog } from "./verdict.ts";

const groupOf = (e: { worker?: string; key: string; epoch?: string; kind: string }) =>
  `${e.worker}\u0000${e.key}\u0000${e.epoch}\u0000${e.kind}`;

export function checkAnswersLogged(
  operations: readonly Operation[],
  served: readonly Served[],
  log: ViolationLog,
): void {
  const loggedAt = new Map<string, number[]>();
  for (const entry of served) {
    const times = loggedAt.get(groupOf(entry)) ?? [];
    times.push(entry.at);
    loggedAt.set(groupOf(entry), times);
  }
  const answers = new Map<string, Operation[]>();
  for (const op of operations) {
    if (op.outcome !== "ok" || op.worker === undefined || op.epoch === undefined) continue;
    const group = answers.get(groupOf(op)) ?? [];
    group.push(op);
    answers.set(groupOf(op), group);
  }
  for (const [group, ops] of answers) {
    const times = (loggedAt.get(group) ?? []).sort((a, b) => a - b);
    ops.sort((a, b) => a.end - b.end);
    let logged = 0;
    const unlogged: Operation[] = [];
    for (const [index, op] of ops.entries()) {
      while (logged < times.length && times[logged]! <= op.end) logged++;
      // The answers matched so far each took one line logged before they ended.
      if (logged <= index - unlogged.length) unlogged.push(op);
    }
    if (unlogged.length === 0) continue;
    const first = unlogged[0]!;
    const more = unlogged.length > 1 ? ` (and ${unlogged.length - 1} more of the group)` : "";
    const detail = `${first.kind} op ${first.id} of ${first.key} was answered ok by worker ${first.worker} at epoch ${first.epoch} (ended ${first.end}) but its served log has ${times.length} such lines, ${logged} logged by then${more}`;
    log.add({
      kind: "unlogged-answer",
      key: first.key,
      detail,
      operations: unlogged.map((op) => op.id),
      workers: [first.worker!],
      epochs: [first.epoch!],
    });
  }
}
