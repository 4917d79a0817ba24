/**
 * One measured window of HTTP load from wrk (wrk.ts), after an unmeasured warm-up: saturated (as
 * fast as the front answers over `connections` keep-alive connections), or paced (about a fixed
 * offered rate, by think time between requests) when the spec has a `rate`. CPU seconds and RSS of the named processes are
 * read from /proc around the window. The windows of one scenario (interleaved rounds) combine
 * into one row: the median of the rounds for req/s and latencies, totals for the rest.
 */
import type { Framing, PathPlan } from "./paths.ts";
import { CpuWindow, type Watched, watchedPeakRssBytes, watchedRssBytes } from "./proc-stats.ts";
import type { ScenarioResult } from "./report.ts";
import { runWrk, type WrkHeaders } from "./wrk.ts";

export interface LoadSpec {
  name: string;
  /** What answers (direct, plain, nginx, pinboard-hot, …) and the worker's answer shape, for the tables. */
  front?: string;
  framing?: Framing;
  /** Origin requests go to, e.g. http://127.0.0.1:8787 (paths come from `plan`). */
  url: string;
  plan: PathPlan;
  /** Fixed request headers, or a function called before each window (e.g. a fresh attestation). */
  headers?: WrkHeaders | (() => Promise<WrkHeaders>);
  /** Processes to account: CPU per 10k requests for each, RSS for `proxy` (the one in the middle). */
  pids: { proxy?: Watched; redis?: Watched; worker?: Watched };
  /** A note printed under the table. */
  note?: string;
  /** Offered load in requests/s over all connections (wrk with think time); unset: as fast as answered. */
  rate?: number;
}

export interface WindowOptions {
  connections: number;
  /** Measured seconds (whole seconds for wrk). */
  durationS: number;
  /** Unmeasured seconds before (0: none; at least 1 s for wrk). */
  warmupS: number;
  /** Runs after the warm-up, right before the measured window (e.g. to reset Redis stats). */
  beforeMeasure?: () => Promise<void>;
}

export interface Window {
  requests: number;
  seconds: number;
  p50Ms: number | null;
  p99Ms: number | null;
  non2xx: number;
  errors: number;
  /** CPU seconds the load generator (wrk) used; null when unreadable. */
  clientCpuS: number | null;
  cpu: Record<string, number>;
  rssMb: number | null;
  peakRssMb: number | null;
}

type Fired = Omit<Window, "cpu" | "rssMb" | "peakRssMb">;

async function fire(spec: LoadSpec, headers: WrkHeaders, connections: number, durationS: number): Promise<Fired> {
  const paced = spec.rate === undefined ? {} : { rate: spec.rate };
  const r = await runWrk({
    url: spec.url,
    plan: spec.plan,
    headers,
    connections,
    durationS: Math.max(1, Math.round(durationS)),
    ...paced,
  });
  return {
    requests: r.requests,
    seconds: r.seconds,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    non2xx: r.non2xx,
    errors: r.errors,
    clientCpuS: r.clientCpuS,
  };
}

/** One measured window of a scenario, after its warm-up. */
export async function loadWindow(spec: LoadSpec, o: WindowOptions): Promise<Window> {
  const headers = typeof spec.headers === "function" ? await spec.headers() : (spec.headers ?? {});
  if (o.warmupS > 0) await fire(spec, headers, o.connections, o.warmupS);
  await o.beforeMeasure?.();
  const cpu = new CpuWindow(spec.pids);
  const fired = await fire(spec, headers, o.connections, o.durationS);
  const proxy = spec.pids.proxy;
  return {
    ...fired,
    cpu: cpu.delta(),
    rssMb: proxy === undefined ? null : mb(watchedRssBytes(proxy)),
    peakRssMb: proxy === undefined ? null : mb(watchedPeakRssBytes(proxy)),
  };
}

/** The median (the mean of the middle two for an even count); null when there is nothing. */
export function median(values: Array<number | null>): number | null {
  const known = values.filter((v): v is number => v !== null).sort((a, b) => a - b);
  if (known.length === 0) return null;
  const mid = known.length >> 1;
  return known.length % 2 ? known[mid]! : (known[mid - 1]! + known[mid]!) / 2;
}

/** One scenario row from its windows: medians of the rounds, totals, CPU per 10k requests. */
export function combine(spec: LoadSpec, windows: Window[]): ScenarioResult {
  const requests = windows.reduce((s, w) => s + w.requests, 0);
  const per10k = (name: string) => {
    const used = windows.map((w) => w.cpu[name]);
    if (requests === 0 || used.some((u) => u === undefined)) return null;
    return (used.reduce((a, b) => a! + b!, 0)! / requests) * 10_000;
  };
  const peaks = windows.map((w) => w.peakRssMb).filter((p): p is number => p !== null);
  return {
    name: spec.name,
    ...(spec.front ? { front: spec.front } : {}),
    ...(spec.framing ? { framing: spec.framing } : {}),
    requests,
    rps: median(windows.map((w) => (w.seconds > 0 ? w.requests / w.seconds : 0))) ?? 0,
    p50Ms: median(windows.map((w) => w.p50Ms)),
    p99Ms: median(windows.map((w) => w.p99Ms)),
    non2xx: windows.reduce((s, w) => s + w.non2xx, 0),
    errors: windows.reduce((s, w) => s + w.errors, 0),
    clientCpuShare: median(
      windows.map((w) => (w.clientCpuS === null || w.seconds === 0 ? null : w.clientCpuS / w.seconds)),
    ),
    cpuPer10k: { proxy: per10k("proxy"), redis: per10k("redis"), worker: per10k("worker") },
    proxyRssMb: windows[windows.length - 1]?.rssMb ?? null,
    proxyPeakRssMb: peaks.length ? Math.max(...peaks) : null,
    seconds: windows.reduce((s, w) => s + w.seconds, 0),
    windows: windows.length,
    roundsRps: windows.map((w) => (w.seconds > 0 ? Math.round(w.requests / w.seconds) : 0)),
    ...(spec.note ? { note: spec.note } : {}),
  };
}

export function mb(bytes: number | null): number | null {
  return bytes === null ? null : bytes / (1024 * 1024);
}
