/**
 * The bench's rows: one per scenario, as written to bench/results.json, and the plain-text
 * tables of them for the terminal (every scenario, and the targets with their verdicts).
 */
import type { Framing } from "./paths.ts";

export interface ScenarioResult {
  name: string;
  /** For load through a front: which (direct, plain, nginx, pinboard-hot, …) and the answer shape. */
  front?: string;
  framing?: Framing;
  requests: number;
  rps: number;
  p50Ms: number | null;
  p99Ms: number | null;
  non2xx: number;
  errors: number;
  /** The load generator's (wrk's) CPU seconds per second of the window: near 1, it was the limit. */
  clientCpuShare?: number | null;
  /** Answers by status, where the client counts them (the Redis floors: by reply). */
  statuses?: Record<string, number>;
  /** CPU seconds per 10k requests of the process in the middle (the proxy, Pinboard, workerd), Redis and the worker fleet. */
  cpuPer10k: { proxy: number | null; redis: number | null; worker: number | null };
  /** RSS of the process in the middle after the scenario, and its peak so far. */
  proxyRssMb: number | null;
  proxyPeakRssMb: number | null;
  seconds: number;
  /** Measured windows combined into this row (interleaved rounds), and each one's req/s. */
  windows?: number;
  roundsRps?: number[];
  /** Event-loop delay of the Pinboard process during the scenario (ms), when it was the one under load. */
  eventLoopDelayMs?: { p50: number; p99: number; max: number } | null;
  /** INFO commandstats: Redis-side microseconds per EVALSHA during the scenario. */
  redisUsecPerEvalsha?: number | null;
  /** Heap bytes the process in the middle allocated per request (Pinboard and the plain proxy; alloc-meter.ts). */
  allocatedBytesPerRequest?: number;
  note?: string;
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  pass: boolean | null;
}

/** The row name of a front's load with one answer shape, e.g. "pinboard-hot:chunked". */
export const rowName = (front: string, framing: Framing): string => `${front}:${framing}`;

/** The q-quantile of an ascending array (nearest rank), null when empty. */
export function percentile(sorted: Float64Array, q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || b === 0 ? null : a / b;

export function fmt(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value.toFixed(digits);
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
}

/** A terminal table: the first column left-aligned, the others right-aligned. */
export function textTable(head: string[], body: string[][]): string {
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => (b[i] ?? "").length)));
  return [pad(head, widths), widths.map((w) => "-".repeat(w)).join("  "), ...body.map((b) => pad(b, widths))].join(
    "\n",
  );
}

/** The scenario table, one row per scenario, aligned for a terminal. */
export function scenarioTable(rows: ScenarioResult[]): string {
  const head = [
    "scenario",
    "req/s",
    "p50 ms",
    "p99 ms",
    "non-2xx",
    "errors",
    "wrk CPU %",
    "mid CPU s/10k",
    "redis CPU s/10k",
    "worker CPU s/10k",
    "redis µs/evalsha",
    "mid RSS MB",
    "mid KB alloc/req",
    "PB loop p99/max ms",
  ];
  const body = rows.map((r) => [
    r.name,
    fmt(r.rps, 0),
    fmt(r.p50Ms, 2),
    fmt(r.p99Ms, 2),
    String(r.non2xx),
    String(r.errors),
    r.clientCpuShare == null ? "–" : fmt(100 * r.clientCpuShare, 0),
    fmt(r.cpuPer10k.proxy, 2),
    fmt(r.cpuPer10k.redis, 2),
    fmt(r.cpuPer10k.worker, 2),
    fmt(r.redisUsecPerEvalsha, 1),
    fmt(r.proxyRssMb, 0),
    r.allocatedBytesPerRequest === undefined ? "–" : fmt(r.allocatedBytesPerRequest / 1000, 1),
    r.eventLoopDelayMs ? `${fmt(r.eventLoopDelayMs.p99, 0)}/${fmt(r.eventLoopDelayMs.max, 0)}` : "–",
  ]);
  const notes = rows.filter((r) => r.note).map((r) => `  ${r.name}: ${r.note}`);
  return [textTable(head, body), ...(notes.length ? ["", "notes:", ...notes] : [])].join("\n");
}

export function targetTable(targets: Target[]): string {
  const head = ["target", "wanted", "measured", "verdict"];
  const body = targets.map((t) => [
    t.name,
    t.target,
    t.measured,
    t.pass === null ? (t.target === "reported" ? "–" : "n/a") : t.pass ? "pass" : "MISS",
  ]);
  return textTable(head, body);
}
