/**
 * The epoch checks: the epochs a client sees for one key never go down in real-time order; no two
 * workers serve one key at one epoch, and none begins serving after another served a higher epoch (a
 * zombie: a request it was already handling may still finish, and linearizes before);
 * the user database never takes a write at an epoch lower than one it already took.
 */

import type { Operation, Served, UserDbWrite } from "./history.ts";
import { groupByKey, parseEpoch, sweepAcknowledged } from "./real-time.ts";
import type { ViolationLog } from "./verdict.ts";

interface EpochedOp {
  op: Operation;
  epoch: bigint;
  start: number;
  end: number;
}

export function checkClientEpochs(operations: readonly Operation[], log: ViolationLog): void {
  const epoched: EpochedOp[] = [];
  for (const op of operations) {
    const epoch = op.outcome === "ok" ? parseEpoch(op.epoch) : undefined;
    if (epoch !== undefined) epoched.push({ op, epoch, start: op.start, end: op.end });
  }
  for (const [key, ops] of groupByKey(epoched.map((e) => ({ ...e, key: e.op.key })))) {
    sweepAcknowledged(
      ops,
      ops,
      (a, b) => a.epoch > b.epoch,
      (later, highest) => {
        if (highest === undefined || later.epoch >= highest.epoch) return;
        const { op: a } = highest;
        const { op: b } = later;
        const detail = `op ${b.id} (${b.kind}, started ${b.start}) saw epoch ${b.epoch} from worker ${b.worker ?? "?"} after op ${a.id} (${a.kind}, ended ${a.end}) saw epoch ${a.epoch} from worker ${a.worker ?? "?"}`;
        log.add({ kind: "epoch-regression", key, detail, operations: [a.id, b.id], ...who(a, b) });
      },
    );
  }
}

function who(a: { worker?: string; epoch?: string }, b: { worker?: string; epoch?: string }) {
  return { workers: [a.worker ?? "?", b.worker ?? "?"], epochs: [a.epoch ?? "?", b.epoch ?? "?"] };
}

/** One (late worker, late epoch) served after (earlier worker, higher epoch): how often, first and last time. */
interface Overlap<T> {
  late: T;
  ahead: T;
  count: number;
  lastAt: number;
}

export function checkServed(served: readonly Served[], log: ViolationLog): void {
  for (const [key, entries] of groupByKey(served)) {
    checkSharedEpochs(key, entries, (e) => e.kind !== "read", log);
    for (const { late, ahead, count, lastAt } of overlaps(entries, true, (e) => e.start ?? e.at)) {
      const times = count > 1 ? ` (${count} times, until ${lastAt})` : "";
      const detail = `worker ${late.worker} served ${key} at epoch ${late.epoch} at ${late.at}${times} after worker ${ahead.worker} had served epoch ${ahead.epoch} at ${ahead.at}`;
      // A zombie's read, which no fence can refuse: only is-current and the lease guard stop it.
      const kind = late.kind === "read" ? "zombie-read" : "split-brain";
      log.add({ kind, key, detail, ...who(ahead, late) });
    }
  }
}

/**
 * Two workers at one epoch of a key (compared as numbers: the user database's epochs are
 * zero-padded): "shared-epoch-write" when at least two of them wrote at it (served an append or
 * increment, or had a user-database write taken), "split-brain" when they only shared it serving.
 */
function checkSharedEpochs<T extends { worker: string; epoch: string; at: number }>(
  key: string,
  entries: readonly T[],
  isWrite: (entry: T) => boolean,
  log: ViolationLog,
): void {
  const byEpoch = new Map<bigint, Map<string, { first: T; wrote: boolean }>>();
  for (const entry of entries) {
    const epoch = parseEpoch(entry.epoch);
    if (epoch === undefined) continue;
    const workers = byEpoch.get(epoch) ?? new Map<string, { first: T; wrote: boolean }>();
    const seen = workers.get(entry.worker);
    if (seen === undefined) workers.set(entry.worker, { first: entry, wrote: isWrite(entry) });
    else seen.wrote ||= isWrite(entry);
    byEpoch.set(epoch, workers);
  }
  for (const [epoch, workers] of byEpoch) {
    if (workers.size < 2) continue;
    const writers = [...workers.values()].filter((w) => w.wrote).length;
    const firsts = [...workers.values()].map(({ first }) => `${first.worker} (first at ${first.at})`).join(", ");
    const detail = `workers ${firsts} all ${writers >= 2 ? "wrote" : "served"} ${key} at epoch ${epoch}`;
    const kind = writers >= 2 ? "shared-epoch-write" : "split-brain";
    log.add({ kind, key, detail, workers: [...workers.keys()], epochs: [String(epoch)] });
  }
}

export function checkUserDb(writes: readonly UserDbWrite[], log: ViolationLog): void {
  for (const [key, entries] of groupByKey(writes.filter((w) => w.accepted))) {
    checkSharedEpochs(key, entries, () => true, log);
    // A write sent before the higher one was taken may have run first and been logged later.
    for (const { late, ahead, count, lastAt } of overlaps(entries, false, (write) => write.start ?? write.at)) {
      const times = count > 1 ? ` (${count} writes, until ${lastAt})` : "";
      const detail = `the user database took worker ${late.worker}'s write of ${key} at epoch ${late.epoch} at ${late.at}${times} after it took worker ${ahead.worker}'s at epoch ${ahead.epoch} at ${ahead.at}`;
      log.add({ kind: "user-db-stale-write", key, detail, ...who(ahead, late) });
    }
  }
}

/**
 * Entries whose epoch is lower than one logged strictly before the entry began (`startOf`: its
 * handling's start for a served request, which may linearize anywhere from then until it was
 * logged; the log time itself for the user database), grouped by the pair. With
 * `otherWorkerOnly`, only a higher epoch of another worker counts (a worker's own later
 * activation supersedes nothing of its own), so the sweep keeps the highest entry and the highest
 * entry of a different worker.
 */
function overlaps<T extends { worker: string; epoch: string; at: number }>(
  entries: T[],
  otherWorkerOnly: boolean,
  startOf: (entry: T) => number = (entry) => entry.at,
) {
  const ranked = entries
    .map((entry) => ({ entry, epoch: parseEpoch(entry.epoch) }))
    .filter((e): e is { entry: T; epoch: bigint } => e.epoch !== undefined);
  type Ranked = (typeof ranked)[number];
  const byLogged = [...ranked].sort((a, b) => a.entry.at - b.entry.at);
  const byStart = [...ranked].sort((a, b) => startOf(a.entry) - startOf(b.entry));
  let best: Ranked | undefined;
  let bestOfOther: Ranked | undefined;
  let logged = 0;
  const found = new Map<string, Overlap<T>>();
  for (const late of byStart) {
    for (; logged < byLogged.length && byLogged[logged]!.entry.at < startOf(late.entry); logged++) {
      const next = byLogged[logged]!;
      if (best === undefined || next.epoch > best.epoch) {
        if (best !== undefined && best.entry.worker !== next.entry.worker) bestOfOther = best;
        best = next;
      } else if (
        next.entry.worker !== best.entry.worker &&
        (bestOfOther === undefined || next.epoch > bestOfOther.epoch)
      )
        bestOfOther = next;
    }
    const ahead = otherWorkerOnly && best?.entry.worker === late.entry.worker ? bestOfOther : best;
    if (ahead === undefined || late.epoch >= ahead.epoch) continue;
    const pair = `${late.entry.worker}@${late.epoch}<${ahead.entry.worker}@${ahead.epoch}`;
    const seen = found.get(pair);
    if (seen === undefined) found.set(pair, { late: late.entry, ahead: ahead.entry, count: 1, lastAt: late.entry.at });
    else Object.assign(seen, { count: seen.count + 1, lastAt: Math.max(seen.lastAt, late.entry.at) });
  }
  return found.values();
}
