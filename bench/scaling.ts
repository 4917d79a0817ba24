/**
 * The scaling checks: pinboard-hot again after filling its namespace to `--placements` rows
 * (the hot cost must stay flat), and pinboard-new again after registering a large fleet in
 * `/new` (the new-placement cost must stay flat), each with the background CPU the large fleet
 * burns idle (heartbeats) measured so it can be taken out of the cost per request.
 */
import type { BenchArgs } from "./args.ts";
import type { LoadSpec } from "./load.ts";
import { fresh } from "./paths.ts";
import { fillRows } from "./placements.ts";
import { CpuWindow } from "./proc-stats.ts";
import { commandStats, describeCommands, resetRedisStats, slowLog } from "./redis-stats.ts";
import type { ScenarioResult } from "./report.ts";
import type { ScenarioRunner } from "./scenarios.ts";
import type { IdleRate } from "./targets.ts";
import type { Topology } from "./topology.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** CPU seconds per second that Pinboard and Redis burn with no load (heartbeats, sweeper). */
export async function idleRate(pids: { proxy: number; redis: number }, ms: number): Promise<IdleRate> {
  const w = new CpuWindow(pids);
  await sleep(ms);
  const d = w.delta();
  return { proxy: (d.proxy ?? 0) / (ms / 1000), redis: (d.redis ?? 0) / (ms / 1000) };
}

const shortCount = (n: number) =>
  n >= 1_000_000 ? `${n / 1_000_000}M` : n >= 1000 ? `${Math.round(n / 1000)}k` : String(n);

export interface ScalingContext {
  top: Topology;
  runner: ScenarioRunner;
  args: BenchArgs;
  log: (msg: string) => void;
  extras: Record<string, unknown>;
}

/** pinboard-hot with the namespace filled to --placements rows; the row's name says how many. */
export async function hotAtManyPlacements(c: ScalingContext, hot: LoadSpec): Promise<ScenarioResult[]> {
  const { top, args } = c;
  const filled = args.placements - args.hot;
  c.log(`filling /hot with ${filled} more placement rows (pipelined HSETs)`);
  const t0 = Date.now();
  await fillRows(
    top.admin,
    top.keys,
    "/hot",
    filled,
    top.base.workers.map((w) => w.sessionId),
  );
  c.extras.fill = { rows: filled, seconds: (Date.now() - t0) / 1000 };
  const name = `${hot.name}@${shortCount(args.placements)}`;
  return c.runner.rounds(
    [{ ...hot, name, note: `the same ${args.hot} hot ids among ${args.placements} placements in the namespace` }],
    1,
  );
}

export interface NewAtManyWorkers {
  /** Live workers in /new during the check. */
  live: number;
  rows: ScenarioResult[];
  idle: IdleRate;
}

/**
 * Registers `--workers` minus the base fleet more workers on /new (for at most
 * --register-budget seconds), then runs `floor` (the resolve script alone) and pinboard-new.
 */
export async function newAtManyWorkers(
  c: ScalingContext,
  baseWorkers: number,
  floor: (name: string) => Promise<void>,
): Promise<NewAtManyWorkers> {
  const { top, args } = c;
  const pb = top.pinboard.pid;
  const redisPid = top.redis.process.pid!;
  const more = args.workers - baseWorkers;
  c.log(
    `registering ${more} more workers on /new (one process, one HTTP server, path prefixes; budget ${args.registerBudget} s)`,
  );
  await resetRedisStats(top.admin);
  const regCpu = new CpuWindow({ pinboard: pb, redis: redisPid });
  const large = await top.startFleet("large", more, ["/new"], {
    onProgress: (n, s) => c.log(`  ${n} registered after ${s.toFixed(0)} s`),
    budgetMs: args.registerBudget * 1000,
  });
  const regUsed = regCpu.delta();
  const live = baseWorkers + large.workers.length;
  c.extras.largeFleetRegistration = {
    requested: more,
    registered: large.workers.length,
    seconds: large.registerSeconds,
    pinboardCpuSeconds: regUsed.pinboard ?? null,
    redisCpuSeconds: regUsed.redis ?? null,
    commands: describeCommands(await commandStats(top.admin), large.workers.length),
    slowlog: await slowLog(top.admin),
  };
  c.log(
    `  ${large.workers.length}/${more} registered in ${large.registerSeconds.toFixed(1)} s; Redis CPU ${(regUsed.redis ?? 0).toFixed(1)} s, Pinboard CPU ${(regUsed.pinboard ?? 0).toFixed(1)} s`,
  );
  // The background of a large fleet (heartbeats), before the load for comparison.
  const idleBefore = await idleRate({ proxy: pb, redis: redisPid }, 2000);
  await floor(`redis-floor-new@${live}`);
  const short =
    live < args.workers
      ? ` (asked for ${args.workers}: registration ran out of its ${args.registerBudget} s budget)`
      : "";
  const spec: LoadSpec = {
    name: `pinboard-new:length@${live}`,
    front: "pinboard-new",
    framing: "length",
    url: top.pinboard.url,
    plan: fresh("/new/m-", "length"),
    pids: { proxy: pb, redis: redisPid },
    note: `a new id per request, ${live} live workers in /new${short}; worker CPU not counted (two fleet processes)`,
  };
  const rows = await c.runner.rounds([spec], 1);
  // The background is read after the load (4 s): before it, the tail of the registrations may
  // still run; the window before is kept in the results for comparison.
  const idle = await idleRate({ proxy: pb, redis: redisPid }, 4000);
  c.extras.idleAtManyWindows = { before: idleBefore, after: idle };
  c.log(
    `  idle with ${live} workers: Pinboard ${idle.proxy.toFixed(3)} CPU s/s, Redis ${idle.redis.toFixed(3)} CPU s/s (heartbeats)`,
  );
  return { live, rows, idle };
}
