/**
 * The bench's results: one row per scenario, the ratios and scaling checks derived from them,
 * the issue's targets judged against them, a plain-text table for the terminal and the JSON
 * written to bench/results.json.
 */

export interface ScenarioResult {
  name: string;
  requests: number;
  rps: number;
  p50Ms: number | null;
  p99Ms: number | null;
  non2xx: number;
  errors: number;
  statuses: Record<string, number>;
  /** CPU seconds per 10k requests of the process in the middle (baseline proxy, Pinboard, workerd), Redis and the worker fleet. */
  cpuPer10k: { proxy: number | null; redis: number | null; worker: number | null };
  /** RSS of the process in the middle after the scenario, and its peak so far. */
  proxyRssMb: number | null;
  proxyPeakRssMb: number | null;
  seconds: number;
  /** Measured windows pooled into this row (interleaved rounds). */
  windows?: number;
  /** Event-loop delay of the Pinboard process during the scenario (ms), when it was the one under load. */
  eventLoopDelayMs?: { p50: number; p99: number; max: number } | null;
  /** INFO commandstats: Redis-side microseconds per EVALSHA during the scenario. */
  redisUsecPerEvalsha?: number | null;
  note?: string;
}

export interface Target {
  name: string;
  target: string;
  measured: string;
  pass: boolean | null;
}

/** The q-quantile of an ascending array (nearest rank), null when empty. */
export function percentile(sorted: Float64Array, q: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a === null || a === undefined || b === null || b === undefined || b === 0 ? null : a / b;

function fmt(value: number | null | undefined, digits = 1): string {
  if (value === null || value === undefined || !Number.isFinite(value)) return "–";
  return value.toFixed(digits);
}

function pad(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  ");
}

/** The scenario table, one row per scenario, aligned for a terminal. */
export function scenarioTable(rows: ScenarioResult[]): string {
  const head = ["scenario", "req/s", "p50 ms", "p99 ms", "non-2xx", "errors", "mid CPU s/10k", "redis CPU s/10k", "worker CPU s/10k", "redis µs/evalsha", "mid RSS MB", "PB loop p99/max ms"];
  const body = rows.map((r) => [
    r.name,
    fmt(r.rps, 0),
    fmt(r.p50Ms, 2),
    fmt(r.p99Ms, 2),
    String(r.non2xx),
    String(r.errors),
    fmt(r.cpuPer10k.proxy, 2),
    fmt(r.cpuPer10k.redis, 2),
    fmt(r.cpuPer10k.worker, 2),
    fmt(r.redisUsecPerEvalsha, 1),
    fmt(r.proxyRssMb, 0),
    r.eventLoopDelayMs ? `${fmt(r.eventLoopDelayMs.p99, 0)}/${fmt(r.eventLoopDelayMs.max, 0)}` : "–",
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const lines = [pad(head, widths), widths.map((w) => "-".repeat(w)).join("  "), ...body.map((b) => pad(b, widths))];
  const notes = rows.filter((r) => r.note).map((r) => `  ${r.name}: ${r.note}`);
  return [...lines, ...(notes.length ? ["", "notes:", ...notes] : [])].join("\n");
}

export function targetTable(targets: Target[]): string {
  const head = ["target", "wanted", "measured", "verdict"];
  const body = targets.map((t) => [t.name, t.target, t.measured, t.pass === null ? "n/a" : t.pass ? "PASS" : "FAIL"]);
  const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  return [pad(head, widths), widths.map((w) => "-".repeat(w)).join("  "), ...body.map((b) => pad(b, widths))].join("\n");
}

export interface Derived {
  targets: Target[];
  ratios: Record<string, number | null>;
}

/** CPU seconds per second of Pinboard (`proxy`) and Redis while no load runs. */
export interface IdleRate {
  proxy: number;
  redis: number;
}

/**
 * Pinboard + Redis CPU seconds per request, less what they burn with no load at all (heartbeats
 * of a large fleet, the sweeper) over the same window.
 */
export function costPerRequest(r: ScenarioResult | undefined, idle?: IdleRate): number | null {
  if (!r || r.requests === 0 || r.cpuPer10k.proxy === null || r.cpuPer10k.redis === null) return null;
  const raw = (r.cpuPer10k.proxy + r.cpuPer10k.redis) / 10_000;
  const background = idle ? ((idle.proxy + idle.redis) * r.seconds) / r.requests : 0;
  // A background larger than the whole means the idle window was not idle: no figure then.
  return raw - background > 0 ? raw - background : null;
}

function diff(a: number | null | undefined, b: number | null | undefined): number | null {
  return a == null || b == null ? null : a - b;
}

/** Redis CPU seconds per call of a Redis-floor row, less what Redis burns idle over the same window. */
export function redisCostPerCall(r: ScenarioResult | undefined, idle?: IdleRate): number | null {
  if (!r || r.requests === 0 || r.cpuPer10k.redis === null) return null;
  const raw = r.cpuPer10k.redis / 10_000;
  const background = idle ? (idle.redis * r.seconds) / r.requests : 0;
  return raw - background > 0 ? raw - background : null;
}

/** The issue's targets and the ratios behind them, from the measured rows. */
export function judge(
  byName: (name: string) => ScenarioResult | undefined,
  extra: { bytesPerRow: number | null; hotAtBigName: string; newAtManyName: string | null; idleAt10?: IdleRate; idleAtMany?: IdleRate; rate: number },
): Derived {
  const base = byName("baseline");
  const hot = byName("pinboard-hot");
  const fresh = byName("pinboard-new");
  const hotBig = byName(extra.hotAtBigName);
  const newMany = extra.newAtManyName ? byName(extra.newAtManyName) : undefined;
  const wHot = byName("workerd-hot");
  const wNew = byName("workerd-new");
  const big = extra.hotAtBigName.replace("pinboard-hot@", "");
  const many = extra.newAtManyName?.replace("pinboard-new@", "") ?? "1000";

  const ratios: Record<string, number | null> = {
    "pinboard-hot/baseline rps": ratio(hot?.rps, base?.rps),
    "pinboard-new/baseline rps": ratio(fresh?.rps, base?.rps),
    "pinboard-hot p99 - baseline p99 (ms)": hot?.p99Ms != null && base?.p99Ms != null ? hot.p99Ms - base.p99Ms : null,
    [`pinboard-hot p99 - baseline p99 at ${extra.rate}/s (ms)`]: diff(byName(`pinboard-hot@${extra.rate}/s`)?.p99Ms, byName(`baseline@${extra.rate}/s`)?.p99Ms),
    [`pinboard-hot p50 - baseline p50 at ${extra.rate}/s (ms)`]: diff(byName(`pinboard-hot@${extra.rate}/s`)?.p50Ms, byName(`baseline@${extra.rate}/s`)?.p50Ms),
    [`new@${many}/new@10 cost per request`]: ratio(costPerRequest(newMany, extra.idleAtMany), costPerRequest(fresh, extra.idleAt10)),
    [`new@10/new@${many} rps`]: ratio(fresh?.rps, newMany?.rps),
    [`redis-floor-new@${many}/@10 Redis CPU per resolve`]: ratio(redisCostPerCall(byName(`redis-floor-new@${many}`), extra.idleAtMany), redisCostPerCall(byName("redis-floor-new@10"), extra.idleAt10)),
    [`hot@${big}/hot@1k cost per request`]: ratio(costPerRequest(hotBig), costPerRequest(hot)),
    [`hot@1k/hot@${big} rps`]: ratio(hot?.rps, hotBig?.rps),
    [`hot@${big}/hot@1k redis µs per evalsha`]: ratio(hotBig?.redisUsecPerEvalsha, hot?.redisUsecPerEvalsha),
    "workerd-hot/pinboard-hot rps": ratio(wHot?.rps, hot?.rps),
    "workerd-new/pinboard-new rps": ratio(wNew?.rps, fresh?.rps),
  };

  const peaks = ["pinboard-hot", "pinboard-new"].map((n) => byName(n)?.proxyPeakRssMb ?? null).filter((v): v is number => v !== null);
  const maxRss = peaks.length ? Math.max(...peaks) : null;
  const r = (key: string) => ratios[key] ?? null;
  const check = (value: number | null, ok: (v: number) => boolean) => (value === null ? null : ok(value));
  const both = (cost: number | null, slowdown: number | null, limit: number) => (cost === null || slowdown === null ? null : cost <= limit && slowdown <= limit);
  const targets: Target[] = [
    { name: "hot throughput vs baseline", target: "≥ 0.60×", measured: `${fmt(r("pinboard-hot/baseline rps"), 2)}×`, pass: check(r("pinboard-hot/baseline rps"), (v) => v >= 0.6) },
    {
      name: `hot p99 vs baseline p99 at ${extra.rate} req/s`,
      target: "≤ +2 ms",
      measured: `${fmt(r(`pinboard-hot p99 - baseline p99 at ${extra.rate}/s (ms)`), 2)} ms (p50 ${fmt(r(`pinboard-hot p50 - baseline p50 at ${extra.rate}/s (ms)`), 2)} ms; saturated p99 ${fmt(r("pinboard-hot p99 - baseline p99 (ms)"), 1)} ms)`,
      pass: check(r(`pinboard-hot p99 - baseline p99 at ${extra.rate}/s (ms)`), (v) => v <= 2),
    },
    { name: "new throughput vs baseline", target: "≥ 0.40×", measured: `${fmt(r("pinboard-new/baseline rps"), 2)}×`, pass: check(r("pinboard-new/baseline rps"), (v) => v >= 0.4) },
    {
      name: `new cost, 10 → ${many} workers`,
      target: "≤ 1.5× (issue: at 1000)",
      measured: newMany
        ? `${fmt(r(`new@${many}/new@10 cost per request`), 2)}× CPU/req (rps ${fmt(r(`new@10/new@${many} rps`), 2)}×; resolve script alone ${fmt(r(`redis-floor-new@${many}/@10 Redis CPU per resolve`), 2)}×)`
        : "not run",
      // Cost per request: Pinboard + Redis CPU per request less the idle fleet, and the resolve
      // script's own Redis CPU per call. Throughput is shown, not judged: at 1000 workers it also
      // carries the fleet's heartbeats on the same cores.
      pass: both(r(`new@${many}/new@10 cost per request`), r(`redis-floor-new@${many}/@10 Redis CPU per resolve`), 1.5),
    },
    {
      name: `hot cost, 1k → ${big} placements`,
      target: "≤ 1.2× (issue: at 1M)",
      measured: `${fmt(r(`hot@${big}/hot@1k cost per request`), 2)}× CPU/req (rps ${fmt(r(`hot@1k/hot@${big} rps`), 2)}×)`,
      pass: both(r(`hot@${big}/hot@1k cost per request`), r(`hot@1k/hot@${big} rps`), 1.2),
    },
    { name: "Redis memory per placement row", target: "≤ 200 B", measured: `${fmt(extra.bytesPerRow, 0)} B`, pass: check(extra.bytesPerRow, (v) => v <= 200) },
    { name: "Pinboard RSS under load", target: "≤ 150 MB", measured: `${fmt(maxRss, 0)} MB peak`, pass: check(maxRss, (v) => v <= 150) },
    { name: "workerd / Node entry (hot)", target: "reported", measured: `${fmt(r("workerd-hot/pinboard-hot rps"), 2)}× rps`, pass: null },
    { name: "workerd / Node entry (new)", target: "reported", measured: `${fmt(r("workerd-new/pinboard-new rps"), 2)}× rps`, pass: null },
  ];
  return { targets, ratios };
}
