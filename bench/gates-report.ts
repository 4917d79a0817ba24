/**
 * The figures of `npm run bench:gates`: one Sample per measured window, folded into one row per
 * (store, load, mode) with the median over rounds, and the ratios between modes taken round by
 * round (each round's windows ran back to back, so the machine's drift cancels) before the median.
 */
import type { GateMode, StoreKind } from "./gates-worker-main.ts";

export type LoadName = "read" | "write" | "hot" | "stored";

export interface Sample {
  store: StoreKind;
  load: LoadName;
  mode: GateMode;
  round: number;
  requests: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** The worker process's CPU (user + system, every thread) per answered request. */
  cpuUsPerRequest: number;
  /** Answers ≥ 400 and socket errors: a window with any is not a clean measurement. */
  non2xx: number;
  errors: number;
}

export interface Row {
  store: StoreKind;
  load: LoadName;
  mode: GateMode;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
  bad: number;
}

/** One mode against another on one (store, load): medians of the per-round ratios and differences. */
export interface Comparison {
  store: StoreKind;
  load: LoadName;
  /** e.g. "on/off". */
  pair: string;
  rpsRatio: number;
  cpuRatio: number;
  /** CPU µs per request of the first mode minus the second's. */
  cpuUsDelta: number;
  p50Ratio: number;
  /** Rounds in which the first mode used more CPU per request than the second, of `rounds`. */
  cpuHigherRounds: number;
  rounds: number;
}

export function median(values: number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

const key = (s: { store: string; load: string }) => `${s.store} ${s.load}`;

/** Median of each figure over the rounds, per (store, load, mode), in the order first measured. */
export function rows(samples: Sample[]): Row[] {
  const groups = new Map<string, Sample[]>();
  for (const s of samples) {
    const k = `${key(s)} ${s.mode}`;
    groups.set(k, [...(groups.get(k) ?? []), s]);
  }
  return [...groups.values()].map((g) => ({
    store: g[0]!.store,
    load: g[0]!.load,
    mode: g[0]!.mode,
    rps: median(g.map((s) => s.rps)),
    p50Ms: median(g.map((s) => s.p50Ms)),
    p99Ms: median(g.map((s) => s.p99Ms)),
    cpuUsPerRequest: median(g.map((s) => s.cpuUsPerRequest)),
    bad: g.reduce((n, s) => n + s.non2xx + s.errors, 0),
  }));
}

/** `a` against `b` per (store, load) where both ran, round by round. */
export function compare(samples: Sample[], a: GateMode, b: GateMode): Comparison[] {
  const out: Comparison[] = [];
  const cases = [...new Set(samples.map(key))];
  for (const c of cases) {
    const inCase = samples.filter((s) => key(s) === c);
    const pairs = [...new Set(inCase.map((s) => s.round))].flatMap((round) => {
      const x = inCase.find((s) => s.round === round && s.mode === a);
      const y = inCase.find((s) => s.round === round && s.mode === b);
      return x && y ? [{ x, y }] : [];
    });
    if (pairs.length === 0) continue;
    out.push({
      store: inCase[0]!.store,
      load: inCase[0]!.load,
      pair: `${a}/${b}`,
      rpsRatio: median(pairs.map(({ x, y }) => x.rps / y.rps)),
      cpuRatio: median(pairs.map(({ x, y }) => x.cpuUsPerRequest / y.cpuUsPerRequest)),
      cpuUsDelta: median(pairs.map(({ x, y }) => x.cpuUsPerRequest - y.cpuUsPerRequest)),
      p50Ratio: median(pairs.map(({ x, y }) => x.p50Ms / y.p50Ms)),
      cpuHigherRounds: pairs.filter(({ x, y }) => x.cpuUsPerRequest > y.cpuUsPerRequest).length,
      rounds: pairs.length,
    });
  }
  return out;
}

/** A plain text table: the first three columns (names) left-aligned, the figures right-aligned. */
export function table(header: string[], body: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i < 3 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
  return [line(header), widths.map((w) => "-".repeat(w)).join("  "), ...body.map(line)].join("\n");
}

/** A table of `items` whose first two columns are each item's store and load. */
function storeLoadTable<T extends { store: string; load: string }>(
  header: string[],
  items: T[],
  cells: (item: T) => string[],
): string {
  return table(
    ["store", "load", ...header],
    items.map((item) => [item.store, item.load, ...cells(item)]),
  );
}

export function rowTable(all: Row[]): string {
  return storeLoadTable(["gates", "req/s", "p50 ms", "p99 ms", "CPU µs/req", "non-2xx+err"], all, (r) => [
    r.mode,
    r.rps.toFixed(0),
    r.p50Ms.toFixed(2),
    r.p99Ms.toFixed(2),
    r.cpuUsPerRequest.toFixed(1),
    String(r.bad),
  ]);
}

export function comparisonTable(all: Comparison[]): string {
  const signed = (n: number) => `${n >= 0 ? "+" : ""}${n.toFixed(1)}`;
  return storeLoadTable(
    ["pair", "req/s ratio", "CPU/req ratio", "CPU µs/req Δ", "CPU higher in", "p50 ratio"],
    all,
    (c) => [
      c.pair,
      `${c.rpsRatio.toFixed(3)}×`,
      `${c.cpuRatio.toFixed(3)}×`,
      signed(c.cpuUsDelta),
      `${c.cpuHigherRounds}/${c.rounds} rounds`,
      `${c.p50Ratio.toFixed(3)}×`,
    ],
  );
}
