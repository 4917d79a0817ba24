/**
 * What the soak counts: outcomes by label (allowed or failures), errors by kind, latencies (a
 * sorted window per report for its p50/p99, a log-bucket histogram for the whole run, so memory
 * stays flat however long the run), and Pinboard's RSS over time.
 */

export type Verdict = "ok" | "allowed" | "failure";

export interface Outcome {
  /** What the status line of the report groups by: "200", "101", "503 refusal", "502 churn", … */
  label: string;
  verdict: Verdict;
  /** For allowed and failures: why, e.g. "503 no live backends for namespace". */
  kind?: string;
}

/** Latency histogram with 5% wide buckets from 0.05 ms to ~10 min. */
class Histogram {
  private readonly counts = new Map<number, number>();
  private total = 0;
  add(ms: number): void {
    const bucket = Math.max(0, Math.ceil(Math.log(Math.max(ms, 0.05) / 0.05) / Math.log(1.05)));
    this.counts.set(bucket, (this.counts.get(bucket) ?? 0) + 1);
    this.total++;
  }
  quantile(q: number): number {
    if (this.total === 0) return 0;
    const rank = Math.ceil(q * this.total);
    let seen = 0;
    for (const bucket of [...this.counts.keys()].sort((a, b) => a - b)) {
      seen += this.counts.get(bucket)!;
      if (seen >= rank) return 0.05 * 1.05 ** bucket;
    }
    return 0;
  }
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return 0;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}

export interface RssSample {
  atS: number;
  mb: number;
}

export class SoakStats {
  readonly started = Date.now();
  private windowStart = Date.now();
  private window = new Map<string, number>();
  private windowLatencies: number[] = [];
  private readonly totals = new Map<string, number>();
  readonly allowedKinds = new Map<string, number>();
  readonly failureKinds = new Map<string, number>();
  private readonly windowFailures = new Map<string, number>();
  private readonly histogram = new Histogram();
  readonly rss: RssSample[] = [];
  /** A few examples of each failure kind, for the summary. */
  readonly examples = new Map<string, string[]>();
  requests = 0;

  record(outcome: Outcome, latencyMs: number, example?: string): void {
    this.requests++;
    this.window.set(outcome.label, (this.window.get(outcome.label) ?? 0) + 1);
    this.totals.set(outcome.label, (this.totals.get(outcome.label) ?? 0) + 1);
    this.windowLatencies.push(latencyMs);
    this.histogram.add(latencyMs);
    if (outcome.verdict === "allowed" && outcome.kind)
      this.allowedKinds.set(outcome.kind, (this.allowedKinds.get(outcome.kind) ?? 0) + 1);
    if (outcome.verdict === "failure") {
      const kind = outcome.kind ?? outcome.label;
      this.failureKinds.set(kind, (this.failureKinds.get(kind) ?? 0) + 1);
      this.windowFailures.set(kind, (this.windowFailures.get(kind) ?? 0) + 1);
      const list = this.examples.get(kind) ?? [];
      if (list.length < 3 && example) list.push(example);
      this.examples.set(kind, list);
    }
  }

  /** A failure outside any request (the Pinboard process logging an error, a crashed lane). */
  failure(kind: string, example?: string): void {
    this.failureKinds.set(kind, (this.failureKinds.get(kind) ?? 0) + 1);
    this.windowFailures.set(kind, (this.windowFailures.get(kind) ?? 0) + 1);
    const list = this.examples.get(kind) ?? [];
    if (list.length < 3 && example) list.push(example);
    this.examples.set(kind, list);
  }

  sampleRss(mb: number | null): void {
    if (mb !== null) this.rss.push({ atS: (Date.now() - this.started) / 1000, mb });
  }

  get failures(): number {
    let n = 0;
    for (const v of this.failureKinds.values()) n += v;
    return n;
  }

  /** One report line for the window since the last call, then a fresh window. */
  report(extra: string): string {
    const now = Date.now();
    const seconds = (now - this.windowStart) / 1000;
    const count = this.windowLatencies.length;
    const sorted = this.windowLatencies.sort((a, b) => a - b);
    const statuses = [...this.window]
      .sort((a, b) => b[1] - a[1])
      .map(([l, n]) => `${l}:${n}`)
      .join(" ");
    const errors = this.windowFailures.size ? [...this.windowFailures].map(([k, n]) => `${k}×${n}`).join(", ") : "none";
    const rss = this.rss.at(-1);
    const line =
      `[soak ${String(Math.round((now - this.started) / 1000)).padStart(4)}s] ` +
      `${count} req (${(count / Math.max(seconds, 0.001)).toFixed(0)}/s) | ${statuses || "-"} | ` +
      `p50 ${quantile(sorted, 0.5).toFixed(1)} ms p99 ${quantile(sorted, 0.99).toFixed(1)} ms | ` +
      `pinboard rss ${rss ? rss.mb.toFixed(1) : "?"} MB | ${extra} | errors: ${errors}`;
    this.window = new Map();
    this.windowLatencies = [];
    this.windowFailures.clear();
    this.windowStart = now;
    return line;
  }

  totalsByLabel(): Array<[string, number]> {
    return [...this.totals].sort((a, b) => b[1] - a[1]);
  }

  p(q: number): number {
    return this.histogram.quantile(q);
  }
}
