/**
 * The list checks (kinds "append" and "read"): every acknowledged append is in the final read exactly
 * once, a refused one nowhere, an indeterminate one at most once; every read is a prefix of the final
 * read (the list only grows), and holds every append acknowledged before the read started.
 */

import type { Operation } from "./history.ts";
import { groupByKey, sweepAcknowledged } from "./real-time.ts";
import type { ViolationLog } from "./verdict.ts";

interface ListRead extends Operation {
  list: string[];
}

/** An ok append and where its value sits in the final read. */
interface PlacedAppend {
  op: Operation;
  position: number;
  start: number;
  end: number;
}

export function checkLists(
  operations: readonly Operation[],
  finalReads: Record<string, string[]>,
  log: ViolationLog,
): void {
  const listOps = operations.filter((op) => op.kind === "append" || (op.kind === "read" && op.list !== undefined));
  for (const [key, ops] of groupByKey(listOps)) {
    const appends = ops.filter((op) => op.kind === "append");
    const reads = ops.filter((op): op is ListRead => op.kind === "read" && op.outcome === "ok");
    const final = finalReads[key];
    if (final === undefined) {
      if (appends.some((op) => op.outcome === "ok"))
        log.add({ kind: "missing-final-read", key, detail: `no final read of ${key}: its appends cannot be checked` });
      continue;
    }
    const positions = checkFinalRead(key, final, appends, log);
    const placed: PlacedAppend[] = [];
    for (const op of appends) {
      const position = positions.get(op.value ?? "");
      if (op.outcome === "ok" && position !== undefined) placed.push({ op, position, start: op.start, end: op.end });
    }
    const prefixReads = new Set<ListRead>();
    for (const read of reads) {
      if (isPrefix(read.list, final)) prefixReads.add(read);
      else checkNonPrefixRead(key, read, final, appends, placed, log);
    }
    checkStalePrefixReads(key, prefixReads, placed, log);
  }
}

/** Lost, duplicated, refused-but-visible and phantom values of one key; returns each value's position. */
function checkFinalRead(key: string, final: string[], appends: Operation[], log: ViolationLog): Map<string, number> {
  const byValue = new Map(appends.map((op) => [op.value ?? "", op]));
  const positions = new Map<string, number>();
  for (const [position, value] of final.entries()) {
    const op = byValue.get(value);
    if (positions.has(value)) {
      const where = `final read of ${key} holds value ${value} at positions ${positions.get(value)} and ${position}`;
      log.add({ kind: "duplicated-append", key, detail: `${where} (append op ${op?.id ?? "?"})`, ...opsOf(op) });
      continue;
    }
    positions.set(value, position);
    if (op === undefined)
      log.add({
        kind: "phantom-value",
        key,
        detail: `final read of ${key} holds value ${value}, which no op appended`,
      });
  }
  for (const op of appends) {
    const position = positions.get(op.value ?? "");
    if (op.outcome === "ok" && position === undefined)
      log.add({
        kind: "lost-append",
        key,
        detail: `${describeAppend(op)} was acknowledged but is not in the final read`,
        operations: [op.id],
      });
    if (op.outcome === "fail" && position !== undefined)
      log.add({
        kind: "failed-append-visible",
        key,
        detail: `${describeAppend(op)} failed but is in the final read at position ${position}`,
        operations: [op.id],
      });
  }
  return positions;
}

function isPrefix(list: readonly string[], final: readonly string[]): boolean {
  if (list.length > final.length) return false;
  for (let i = 0; i < list.length; i++) if (list[i] !== final[i]) return false;
  return true;
}

/** A read off the one order: say where it parts from the final read, then check its values one by one. */
function checkNonPrefixRead(
  key: string,
  read: ListRead,
  final: string[],
  appends: Operation[],
  placed: PlacedAppend[],
  log: ViolationLog,
): void {
  const at = read.list.findIndex((value, i) => value !== final[i]);
  const parted =
    at === -1
      ? `is longer than the final read (${final.length})`
      : `has ${read.list[at]} at position ${at} where the final read has ${final[at] ?? "nothing"}`;
  log.add({ kind: "non-prefix-read", key, detail: `read op ${read.id} of ${key} ${parted}`, operations: [read.id] });
  const seen = new Set<string>();
  for (const value of read.list) {
    if (seen.has(value))
      log.add({
        kind: "duplicated-append",
        key,
        detail: `read op ${read.id} of ${key} holds value ${value} twice`,
        operations: [read.id],
      });
    seen.add(value);
  }
  for (const op of appends)
    if (op.outcome === "fail" && seen.has(op.value ?? ""))
      log.add({
        kind: "failed-append-visible",
        key,
        detail: `${describeAppend(op)} failed but read op ${read.id} holds it`,
        operations: [op.id, read.id],
      });
  const missed = placed.find((append) => append.end < read.start && !seen.has(append.op.value ?? ""));
  if (missed !== undefined) reportStale(key, read, missed.op, log);
}

/** A prefix read holds final[0..length): it is stale when an acknowledged append sits at or past its length. */
function checkStalePrefixReads(key: string, reads: Set<ListRead>, placed: PlacedAppend[], log: ViolationLog): void {
  sweepAcknowledged(
    placed,
    [...reads],
    (a, b) => a.position > b.position,
    (read, furthest) => {
      if (furthest !== undefined && furthest.position >= read.list.length) reportStale(key, read, furthest.op, log);
    },
  );
}

function reportStale(key: string, read: ListRead, append: Operation, log: ViolationLog): void {
  const detail = `read op ${read.id} of ${key} (started ${read.start}, worker ${read.worker ?? "?"}, epoch ${read.epoch ?? "?"}) lacks ${describeAppend(append)}, acknowledged at ${append.end}`;
  log.add({ kind: "stale-read", key, detail, operations: [read.id, append.id] });
}

function describeAppend(op: Operation): string {
  return `append op ${op.id} (value ${op.value ?? "?"}, node ${op.node}, worker ${op.worker ?? "?"})`;
}

function opsOf(op: Operation | undefined): { operations?: number[] } {
  return op === undefined ? {} : { operations: [op.id] };
}
