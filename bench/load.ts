/**
 * HTTP load: autocannon with `connections` keep-alive connections, each request's path from
 * `path()` (autocannon's request builder), for one measured window after an unmeasured warm-up.
 * Latencies are recorded here from autocannon's `response` events as fractional milliseconds
 * (autocannon's own histogram keeps whole milliseconds), over every response whatever its
 * status. CPU seconds and RSS of the named processes are read from /proc around the window.
 * Several windows of one scenario (interleaved rounds) combine into one result.
 */
import autocannon from "autocannon";
import { firePaced } from "./paced.ts";
import { CpuWindow, peakRssBytes, rssBytes } from "./proc-stats.ts";
import { percentile, type ScenarioResult } from "./report.ts";

export interface LoadSpec {
  name: string;
  /** Origin requests go to, e.g. http://127.0.0.1:8787 (paths come from `path`). */
  url: string;
  /** The path of the next request (called once per request, warm-ups included). */
  path: () => string;
  /** Fixed request headers, or a function called before each window (e.g. a fresh attestation). */
  headers?: Record<string, string> | (() => Promise<Record<string, string>>);
  /** Processes to account: CPU per 10k requests for each, RSS for `proxy` (the one in the middle). */
  pids: { proxy?: number; redis?: number; worker?: number };
  /** A note printed under the table. */
  note?: string;
  /** Offered load in requests/s over all connections, evenly paced (paced.ts); unset: autocannon, as fast as answered. */
  rate?: number;
}

export interface WindowOptions {
  connections: number;
  durationS: number;
  warmupS: number;
  /** Runs after the warm-up, right before the measured window (e.g. to reset Redis stats). */
  beforeMeasure?: () => Promise<void>;
}

export interface Window {
  requests: number;
  statuses: Record<string, number>;
  errors: number;
  latencies: Float64Array;
  seconds: number;
  cpu: Record<string, number>;
  rssMb: number | null;
  peakRssMb: number | null;
}

type Fired = Omit<Window, "cpu" | "rssMb" | "peakRssMb">;

function fire(spec: LoadSpec, headers: Record<string, string>, connections: number, durationS: number, sampleCap: number): Promise<Fired> {
  const { url, path, rate } = spec;
  if (rate) return firePaced(url, path, headers, { connections, rate, durationS, sampleCap });
  const latencies = new Float64Array(sampleCap);
  let n = 0;
  const statuses: Record<string, number> = {};
  const started = performance.now();
  return new Promise<Fired>((resolve, reject) => {
    const instance = autocannon(
      {
        url,
        connections,
        duration: durationS,
        timeout: 10,
        requests: [
          {
            setupRequest: (req) => {
              req.path = path();
              return req;
            },
          },
        ],
        headers,
      },
      (err: unknown, result: autocannon.Result) => {
        if (err) return reject(err instanceof Error ? err : new Error(String(err)));
        const seconds = (performance.now() - started) / 1000;
        const requests = Object.values(statuses).reduce((a, b) => a + b, 0);
        resolve({ requests, statuses, errors: result.errors + result.timeouts, latencies: latencies.subarray(0, n), seconds });
      },
    );
    instance.on("response", (_client, status, _bytes, ms) => {
      if (n < latencies.length) latencies[n++] = ms;
      statuses[status] = (statuses[status] ?? 0) + 1;
    });
  });
}

/** One measured window of a scenario, after its warm-up. */
export async function loadWindow(spec: LoadSpec, o: WindowOptions): Promise<Window> {
  const headers = typeof spec.headers === "function" ? await spec.headers() : (spec.headers ?? {});
  if (o.warmupS > 0) await fire(spec, headers, o.connections, o.warmupS, 1);
  await o.beforeMeasure?.();
  const cpu = new CpuWindow(spec.pids);
  const fired = await fire(spec, headers, o.connections, o.durationS, 4_000_000);
  const proxy = spec.pids.proxy;
  return {
    ...fired,
    cpu: cpu.delta(),
    rssMb: proxy === undefined ? null : mb(rssBytes(proxy)),
    peakRssMb: proxy === undefined ? null : mb(peakRssBytes(proxy)),
  };
}

/** One scenario row from its windows: totals, pooled latencies, CPU per 10k requests. */
export function combine(spec: LoadSpec, windows: Window[]): ScenarioResult {
  const requests = windows.reduce((s, w) => s + w.requests, 0);
  const seconds = windows.reduce((s, w) => s + w.seconds, 0);
  const statuses: Record<string, number> = {};
  for (const w of windows) for (const [code, count] of Object.entries(w.statuses)) statuses[code] = (statuses[code] ?? 0) + count;
  const pooled = new Float64Array(windows.reduce((s, w) => s + w.latencies.length, 0));
  let at = 0;
  for (const w of windows) {
    pooled.set(w.latencies, at);
    at += w.latencies.length;
  }
  pooled.sort();
  const ok = Object.entries(statuses).reduce((sum, [code, count]) => sum + (code.startsWith("2") ? count : 0), 0);
  const per10k = (name: string) => {
    const used = windows.map((w) => w.cpu[name]);
    if (requests === 0 || used.some((u) => u === undefined)) return null;
    return (used.reduce((a, b) => a! + b!, 0)! / requests) * 10_000;
  };
  const last = windows[windows.length - 1];
  return {
    name: spec.name,
    requests,
    rps: seconds > 0 ? requests / seconds : 0,
    p50Ms: percentile(pooled, 0.5),
    p99Ms: percentile(pooled, 0.99),
    non2xx: requests - ok,
    errors: windows.reduce((s, w) => s + w.errors, 0),
    statuses,
    cpuPer10k: { proxy: per10k("proxy"), redis: per10k("redis"), worker: per10k("worker") },
    proxyRssMb: last?.rssMb ?? null,
    proxyPeakRssMb: last?.peakRssMb ?? null,
    seconds,
    windows: windows.length,
    ...(spec.note ? { note: spec.note } : {}),
  };
}

export function mb(bytes: number | null): number | null {
  return bytes === null ? null : bytes / (1024 * 1024);
}
