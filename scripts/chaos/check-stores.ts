/**
 * The stores as Redis holds them at the end (history.stored, read-stores.ts), against what the
 * clients were told: every acknowledged append in the durability store's list exactly once and, for
 * a `u…` key, in the user database's list exactly once; no value nobody sent, nor one whose append
 * was definitely refused; the durable list equal to the final read through Pinboard; each counter
 * within its acknowledged and indeterminate increments, and no lower than any value it answered.
 *
 * The user database takes an append BEFORE the durability store, so it may hold a value whose
 * append's outcome was unknown (the store then failed, or the answer was lost). A definite refusal
 * ("fail", workload.ts) is only ever one Pinboard answered before forwarding, or after the worker
 * refused in-band before running the instance's fetch (routes.ts): no worker wrote anything for it.
 */

import type { Operation, StoredState } from "./history.ts";
import { groupByKey } from "./real-time.ts";
import type { ViolationLog } from "./verdict.ts";

export function checkStores(
  operations: readonly Operation[],
  finalReads: Record<string, string[]>,
  stored: StoredState,
  log: ViolationLog,
): void {
  const appends = groupByKey(operations.filter((op) => op.kind === "append"));
  const listKeys = new Set([...appends.keys(), ...Object.keys(stored.lists)]);
  for (const key of listKeys) {
    const ops = appends.get(key) ?? [];
    checkStoredList(key, "durability store", stored.lists[key] ?? [], ops, log);
    const final = finalReads[key];
    const list = stored.lists[key] ?? [];
    if (final !== undefined && JSON.stringify(final) !== JSON.stringify(list)) {
      const detail = `the durability store holds ${key} as ${describe(list)} but the final read through Pinboard was ${describe(final)}`;
      log.add({ kind: "store-final-read-mismatch", key, detail });
    }
  }
  const userKeys = new Set([...[...appends.keys()].filter(isUserDbKey), ...Object.keys(stored.userDb)]);
  for (const key of userKeys)
    checkStoredList(key, "user database", stored.userDb[key] ?? [], appends.get(key) ?? [], log);
  checkStoredCounters(operations, stored.counters, log);
}

/** A list instance whose appends also go to the user database (chaos-worker.ts). */
export function isUserDbKey(key: string): boolean {
  return key.slice(key.lastIndexOf("/") + 1).startsWith("u");
}

function checkStoredList(key: string, where: string, list: string[], ops: Operation[], log: ViolationLog): void {
  const byValue = new Map(ops.map((op) => [op.value ?? "", op]));
  const seen = new Set<string>();
  for (const value of list) {
    const op = byValue.get(value);
    const operations = op === undefined ? {} : { operations: [op.id] };
    if (seen.has(value)) {
      const detail = `the ${where}'s ${key} holds value ${value} twice (append op ${op?.id ?? "?"})`;
      log.add({ kind: "store-duplicated-value", key, detail, ...operations });
    }
    seen.add(value);
    if (op === undefined || op.outcome === "fail") {
      const why =
        op === undefined ? "which no op appended" : `whose append op ${op.id} was refused (${op.error ?? "?"})`;
      log.add({
        kind: "store-phantom-value",
        key,
        detail: `the ${where}'s ${key} holds value ${value}, ${why}`,
        ...operations,
      });
    }
  }
  for (const op of ops)
    if (op.outcome === "ok" && !seen.has(op.value ?? "")) {
      const detail = `append op ${op.id} (value ${op.value ?? "?"}, worker ${op.worker ?? "?"}, epoch ${op.epoch ?? "?"}) was acknowledged but the ${where}'s ${key} lacks it`;
      log.add({ kind: "store-lost-append", key, detail, operations: [op.id] });
    }
}

function checkStoredCounters(
  operations: readonly Operation[],
  counters: Record<string, number>,
  log: ViolationLog,
): void {
  for (const [key, ops] of groupByKey(operations.filter((op) => op.kind === "incr" || op.key in counters))) {
    const incrs = ops.filter((op) => op.kind === "incr");
    if (incrs.length === 0) continue;
    const stored = counters[key] ?? 0;
    const ok = incrs.filter((op) => op.outcome === "ok").length;
    const info = incrs.filter((op) => op.outcome === "info").length;
    const answered = ops.filter((op) => op.outcome === "ok" && op.counter !== undefined);
    const highest = answered.reduce<Operation | undefined>(
      (a, b) => (a && a.counter! >= b.counter! ? a : b),
      undefined,
    );
    const counts = `${ok} acknowledged and ${info} indeterminate incrs`;
    if (stored < ok || stored > ok + info)
      log.add({
        kind: "store-counter-out-of-range",
        key,
        detail: `the durability store holds ${key} = ${stored} after ${counts}`,
      });
    if (highest !== undefined && stored < highest.counter!)
      log.add({
        kind: "store-counter-out-of-range",
        key,
        detail: `the durability store holds ${key} = ${stored}, below the ${highest.counter} ${highest.kind} op ${highest.id} was answered`,
        operations: [highest.id],
      });
  }
}

function describe(list: string[]): string {
  return list.length <= 6 ? `[${list.join(", ")}]` : `${list.length} values ending ${list.slice(-3).join(", ")}`;
}
