/**
 * The issue's targets, each judged from rows of the same run: throughput ratios against the
 * plain node:http proxy per answer shape, latency differences (paced and saturated), Pinboard's
 * RSS, the scaling checks, Redis bytes per row, and whether the client left enough headroom to
 * trust the rest. A target whose rows did not run is "n/a", never a pass.
 */
import { fmt, ratio, rowName, type ScenarioResult, type Target } from "./report.ts";

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

/** Redis CPU seconds per call of a Redis-floor row, less what Redis burns idle over the same window. */
export function redisCostPerCall(r: ScenarioResult | undefined, idle?: IdleRate): number | null {
  if (!r || r.requests === 0 || r.cpuPer10k.redis === null) return null;
  const raw = r.cpuPer10k.redis / 10_000;
  const background = idle ? (idle.redis * r.seconds) / r.requests : 0;
  return raw - background > 0 ? raw - background : null;
}

const diff = (a: number | null | undefined, b: number | null | undefined): number | null =>
  a == null || b == null ? null : a - b;
const check = (value: number | null, ok: (v: number) => boolean): boolean | null => (value === null ? null : ok(value));
const both = (a: number | null, b: number | null, limit: number): boolean | null =>
  a === null || b === null ? null : a <= limit && b <= limit;

/** Rows that go through a proxy of some kind (everything measured against `direct`). */
const PROXIES = ["plain", "plain-resolve", "nginx", "pinboard-hot", "pinboard-new", "workerd-hot", "workerd-new"];

export interface JudgeInput {
  bytesPerRow: number | null;
  hotAtBigName: string;
  newAtManyName: string | null;
  idleAt10?: IdleRate;
  idleAtMany?: IdleRate;
  /** The paced rate, when the paced rows ran. */
  rate: number | null;
}

export interface Judged {
  targets: Target[];
  ratios: Record<string, number | null>;
}

/** The issue's targets and the ratios behind them, from the measured rows. */
export function judge(byName: (name: string) => ScenarioResult | undefined, o: JudgeInput): Judged {
  const row = (front: string, framing: "length" | "chunked" = "length") => byName(rowName(front, framing));
  const plain = row("plain");
  const plainChunked = row("plain", "chunked");
  const hot = row("pinboard-hot");
  const hotChunked = row("pinboard-hot", "chunked");
  const fresh = row("pinboard-new");
  const paced = (front: string) => (o.rate === null ? undefined : byName(`${rowName(front, "length")}@${o.rate}/s`));
  const hotBig = byName(o.hotAtBigName);
  const newMany = o.newAtManyName ? byName(o.newAtManyName) : undefined;
  const big = o.hotAtBigName.split("@")[1] ?? "big";
  const many = o.newAtManyName?.split("@")[1] ?? "1000";

  // The worker's headroom: direct against the fastest proxy, per answer shape (reported).
  const fastestOf = (framing: "length" | "chunked") =>
    PROXIES.map((f) => row(f, framing)).reduce<ScenarioResult | undefined>(
      (a, r) => (r && (!a || r.rps > a.rps) ? r : a),
      undefined,
    );
  const headroom = (["length", "chunked"] as const).map((framing) => ({
    framing,
    ratio: ratio(row("direct", framing)?.rps, fastestOf(framing)?.rps),
  }));
  // The client's headroom: wrk against nginx answering by itself, against the fastest proxy of either shape.
  const fastest = [fastestOf("length"), fastestOf("chunked")].reduce<ScenarioResult | undefined>(
    (a, r) => (r && (!a || r.rps > a.rps) ? r : a),
    undefined,
  );
  const ceiling = row("ceiling");

  const ratios: Record<string, number | null> = {
    "client ceiling/fastest proxy rps": ratio(ceiling?.rps, fastest?.rps),
    "direct/fastest proxy rps (length)": headroom[0]!.ratio,
    "direct/fastest proxy rps (chunked)": headroom[1]!.ratio,
    "pinboard-hot/plain rps (length)": ratio(hot?.rps, plain?.rps),
    "pinboard-hot/plain rps (chunked)": ratio(hotChunked?.rps, plainChunked?.rps),
    "pinboard-new/plain rps (length)": ratio(fresh?.rps, plain?.rps),
    "plain-resolve/plain rps (length)": ratio(row("plain-resolve")?.rps, plain?.rps),
    "plain-resolve/plain rps (chunked)": ratio(row("plain-resolve", "chunked")?.rps, plainChunked?.rps),
    "nginx/plain rps (length)": ratio(row("nginx")?.rps, plain?.rps),
    "nginx/plain rps (chunked)": ratio(row("nginx", "chunked")?.rps, plainChunked?.rps),
    "pinboard-hot p99 - plain p99 (length, ms)": diff(hot?.p99Ms, plain?.p99Ms),
    "pinboard-hot p99 - plain p99 (chunked, ms)": diff(hotChunked?.p99Ms, plainChunked?.p99Ms),
    "pinboard-hot p99 - plain p99, paced (ms)": diff(paced("pinboard-hot")?.p99Ms, paced("plain")?.p99Ms),
    "pinboard-hot p50 - plain p50, paced (ms)": diff(paced("pinboard-hot")?.p50Ms, paced("plain")?.p50Ms),
    "plain-resolve p99 - plain p99, paced (ms)": diff(paced("plain-resolve")?.p99Ms, paced("plain")?.p99Ms),
    "plain-resolve p50 - plain p50, paced (ms)": diff(paced("plain-resolve")?.p50Ms, paced("plain")?.p50Ms),
    "2 processes/1 process rps (pinboard-hot)": ratio(
      byName(rowName("pinboard-hot-2proc", "length"))?.rps,
      byName(rowName("pinboard-hot-1proc", "length"))?.rps,
    ),
    [`new@${many}/new@10 cost per request`]: ratio(
      costPerRequest(newMany, o.idleAtMany),
      costPerRequest(fresh, o.idleAt10),
    ),
    [`new@10/new@${many} rps`]: ratio(fresh?.rps, newMany?.rps),
    [`redis-floor-new@${many}/@10 Redis CPU per resolve`]: ratio(
      redisCostPerCall(byName(`redis-floor-new@${many}`), o.idleAtMany),
      redisCostPerCall(byName("redis-floor-new@10"), o.idleAt10),
    ),
    [`hot@${big}/hot@1k cost per request`]: ratio(costPerRequest(hotBig), costPerRequest(hot)),
    [`hot@1k/hot@${big} rps`]: ratio(hot?.rps, hotBig?.rps),
    "workerd-hot/pinboard-hot rps": ratio(row("workerd-hot")?.rps, hot?.rps),
    "workerd-new/pinboard-new rps": ratio(row("workerd-new")?.rps, fresh?.rps),
  };
  const r = (key: string) => ratios[key] ?? null;

  const peaks = [hot, hotChunked, fresh].map((x) => x?.proxyPeakRssMb ?? null).filter((v): v is number => v !== null);
  const maxRss = peaks.length ? Math.max(...peaks) : null;
  const behind = ["plain", "pinboard-hot"].flatMap((f) => {
    const p = paced(f);
    return p && o.rate !== null && p.rps < 0.9 * o.rate ? [`${f} ${fmt(p.rps, 0)}/s`] : [];
  });
  const sustained = behind.length === 0;
  const unsustained = behind.join(", ");
  const times = (key: string) => `${fmt(r(key), 2)}×`;
  const ms = (key: string) => `${signed(r(key))} ms`;
  const targets: Target[] = [
    {
      name: "client headroom: wrk's ceiling vs fastest proxy",
      target: "≥ 3.00×",
      measured:
        ceiling && fastest
          ? `${times("client ceiling/fastest proxy rps")} (${fmt(ceiling.rps, 0)} req/s; fastest ${fastest.name})`
          : "not run (needs nginx)",
      pass: check(r("client ceiling/fastest proxy rps"), (v) => v >= 3),
    },
    {
      name: "worker headroom: direct vs fastest proxy, Content-Length",
      target: "reported",
      measured: times("direct/fastest proxy rps (length)"),
      pass: null,
    },
    {
      name: "pinboard-hot / plain, Content-Length",
      target: "≥ 0.90×",
      measured: times("pinboard-hot/plain rps (length)"),
      pass: check(r("pinboard-hot/plain rps (length)"), (v) => v >= 0.9),
    },
    {
      name: "pinboard-hot / plain, chunked",
      target: "≥ 0.90×",
      measured: times("pinboard-hot/plain rps (chunked)"),
      pass: check(r("pinboard-hot/plain rps (chunked)"), (v) => v >= 0.9),
    },
    {
      name: "pinboard-new / plain, Content-Length",
      target: "≥ 0.70×",
      measured: times("pinboard-new/plain rps (length)"),
      pass: check(r("pinboard-new/plain rps (length)"), (v) => v >= 0.7),
    },
    {
      name: `p99 paced at ${o.rate ?? "–"} req/s, hot − plain`,
      target: "≤ +1 ms",
      measured: `${ms("pinboard-hot p99 - plain p99, paced (ms)")} (p50 ${ms("pinboard-hot p50 - plain p50, paced (ms)")})${sustained ? "" : `; rate not sustained (${unsustained})`}`,
      // A front that fell behind the offered rate was saturated after all: no verdict then.
      pass: sustained ? check(r("pinboard-hot p99 - plain p99, paced (ms)"), (v) => v <= 1) : null,
    },
    {
      name: "p99 saturated, hot − plain, Content-Length",
      target: "≤ +5 ms",
      measured: ms("pinboard-hot p99 - plain p99 (length, ms)"),
      pass: check(r("pinboard-hot p99 - plain p99 (length, ms)"), (v) => v <= 5),
    },
    {
      name: "p99 saturated, hot − plain, chunked",
      target: "≤ +5 ms",
      measured: ms("pinboard-hot p99 - plain p99 (chunked, ms)"),
      pass: check(r("pinboard-hot p99 - plain p99 (chunked, ms)"), (v) => v <= 5),
    },
    {
      name: "Pinboard RSS at 64 connections",
      target: "≤ 150 MB",
      measured: `${fmt(maxRss, 0)} MB peak`,
      pass: check(maxRss, (v) => v <= 150),
    },
    {
      name: "heap allocated per hot forward",
      target: "≤ 10 KB",
      measured: `${fmt(kb(hot?.allocatedBytesPerRequest), 1)} KB (plain proxy ${fmt(kb(plain?.allocatedBytesPerRequest), 1)} KB)`,
      pass: check(kb(hot?.allocatedBytesPerRequest), (v) => v <= 10),
    },
    {
      name: "workerd CPU per hot forward",
      target: "≤ 1 ms",
      measured: `${fmt(workerdMs(row("workerd-hot")), 2)} ms (per new placement ${fmt(workerdMs(row("workerd-new")), 2)} ms)`,
      pass: check(workerdMs(row("workerd-hot")), (v) => v <= 1),
    },
    {
      name: `new-placement cost, 10 → ${many} workers`,
      target: "≤ 1.50× (issue: at 1000)",
      measured: newMany
        ? `${times(`new@${many}/new@10 cost per request`)} CPU/req (rps ${times(`new@10/new@${many} rps`)}; resolve script alone ${times(`redis-floor-new@${many}/@10 Redis CPU per resolve`)})`
        : "not run",
      // Cost per request: Pinboard + Redis CPU per request less the idle fleet, and the resolve
      // script's own Redis CPU per call. Throughput is shown, not judged: at 1000 workers it also
      // carries the fleet's heartbeats on the same cores.
      pass: both(r(`new@${many}/new@10 cost per request`), r(`redis-floor-new@${many}/@10 Redis CPU per resolve`), 1.5),
    },
    {
      name: `hot cost, 1k → ${big} placements`,
      target: "≤ 1.20× (issue: at 1M)",
      measured: hotBig
        ? `${times(`hot@${big}/hot@1k cost per request`)} CPU/req (rps ${times(`hot@1k/hot@${big} rps`)})`
        : "not run",
      pass: both(r(`hot@${big}/hot@1k cost per request`), r(`hot@1k/hot@${big} rps`), 1.2),
    },
    {
      name: "Redis memory per placement row",
      target: "≤ 200 B",
      measured: `${fmt(o.bytesPerRow, 0)} B`,
      pass: check(o.bytesPerRow, (v) => v <= 200),
    },
    {
      name: "2 Pinboard processes / 1 (hot)",
      target: "reported",
      measured: `${times("2 processes/1 process rps (pinboard-hot)")} req/s`,
      pass: null,
    },
    {
      name: "nginx / plain (Content-Length)",
      target: "reported",
      measured: times("nginx/plain rps (length)"),
      pass: null,
    },
    {
      name: "workerd / Node entry (hot)",
      target: "reported",
      measured: times("workerd-hot/pinboard-hot rps"),
      pass: null,
    },
    {
      name: "workerd / Node entry (new)",
      target: "reported",
      measured: times("workerd-new/pinboard-new rps"),
      pass: null,
    },
  ];
  return { targets, ratios };
}

/** Bytes to KB (1000 B), null kept. */
const kb = (bytes: number | undefined): number | null => (bytes === undefined ? null : bytes / 1000);

/** The workerd process' CPU milliseconds per request of a Workers-entry row. */
const workerdMs = (r: ScenarioResult | undefined): number | null =>
  r?.cpuPer10k.proxy == null ? null : r.cpuPer10k.proxy / 10;

function signed(v: number | null): string {
  return v === null ? "–" : `${v >= 0 ? "+" : "−"}${Math.abs(v).toFixed(2)}`;
}
