/**
 * Rates from counters: /registry/health counts resolutions by outcome since the node started, so
 * a rate is the increase between two samples over the node's own uptime between them. The first
 * sample has no predecessor, so it seeds the series with the average since the node started: the
 * chart has data from the first paint, never an empty box waiting for a second refresh.
 */

export interface Totals {
  counts: Readonly<Record<string, number>>;
  uptimeMs: number;
}

export interface Sample {
  /** Per second, by series. */
  rates: Record<string, number>;
  /** Over how many seconds of the node's uptime. */
  seconds: number;
  /** The seed: the average since the node started (no earlier sample, or the node restarted). */
  seed: boolean;
}

/** Two samples closer than this (an action's extra refresh) would give a noisy rate: the later one is skipped. */
const MIN_GAP_MS = 500;

export class Series {
  private list: Sample[] = [];
  private last: Totals | null = null;
  /** Samples taken so far (the list keeps the last `keep`); it tells a redraw is due. */
  taken = 0;

  constructor(
    private readonly names: readonly string[],
    private readonly keep: number,
  ) {}

  get samples(): readonly Sample[] {
    return this.list;
  }

  /** The latest sample, if any. */
  get latest(): Sample | undefined {
    return this.list.at(-1);
  }

  add(totals: Totals): void {
    const last = this.last;
    const base = last && !restarted(last, totals, this.names) ? last : null;
    if (base && totals.uptimeMs - base.uptimeMs < MIN_GAP_MS) return;
    const seconds = base ? (totals.uptimeMs - base.uptimeMs) / 1000 : Math.max(totals.uptimeMs, 1000) / 1000;
    const rates: Record<string, number> = {};
    for (const n of this.names) rates[n] = ((totals.counts[n] ?? 0) - (base?.counts[n] ?? 0)) / seconds;
    const sample = { rates, seconds, seed: base === null };
    this.list = [...(base ? this.list : []), sample].slice(-this.keep);
    this.last = { counts: { ...totals.counts }, uptimeMs: totals.uptimeMs };
    this.taken += 1;
  }
}

/** The node restarted (or another node answered): its uptime or a counter went back. */
function restarted(last: Totals, now: Totals, names: readonly string[]): boolean {
  return now.uptimeMs < last.uptimeMs || names.some((n) => (now.counts[n] ?? 0) < (last.counts[n] ?? 0));
}

/** A rate per second in a few digits: "12", "3.4", "0.25", "0.004", "0". */
export function perSecond(rate: number): string {
  if (rate <= 0) return "0";
  if (rate >= 10) return rate.toFixed(0);
  if (rate >= 1) return rate.toFixed(1);
  if (rate >= 0.01) return rate.toFixed(2);
  return String(Number(rate.toPrecision(1)));
}
