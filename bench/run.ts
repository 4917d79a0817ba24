/**
 * `npm run bench`: Pinboard side by side with a plain proxy and the Redis floor, in one run on
 * one machine, then the scaling checks. bench/README.md says what each row means; `--help` lists
 * the flags.
 *
 * Cold start: new placements are refused for one lease (15 s, the production default) after a
 * bucket's first resolve. The bench touches every bucket right after start-up and waits that
 * lease out, starting the Workers entry and measuring `direct` in the meantime.
 */
import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { signAttestation } from "../src/auth/attestation.ts";
import { ATTESTATION_HEADER, EPOCH_HEADER } from "../src/pinned/index.ts";
import { affinityHash } from "../src/resolve/affinity.ts";
import { parseBenchArgs, USAGE, type BenchArgs } from "./args.ts";
import { installReaper, killAll, ROOT } from "./children.ts";
import { loadWindow, mb, type LoadSpec } from "./load.ts";
import { fillRows, memoryPerRow, placeThroughPinboard, startColdStartWindows } from "./placements.ts";
import { CpuWindow, rssBytes } from "./proc-stats.ts";
import { formatBusy } from "./busy-stretches.ts";
import { formatSummary, type ProfileSummary } from "./profile-summary.ts";
import { runRedisFloor } from "./redis-floor.ts";
import { commandStats, describeCommands, resetRedisStats, slowLog } from "./redis-stats.ts";
import { judge, scenarioTable, targetTable, type IdleRate, type ScenarioResult } from "./report.ts";
import { ScenarioRunner } from "./scenarios.ts";
import { BALANCE_FACTOR, LEASE_MS, pinboardSettings, startTopology, type Topology } from "./topology.ts";
import { startWorkersEntry, type RunningWorkersEntry } from "./workers-entry.ts";

const BASE_WORKERS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

let topology: Topology | undefined;
let workerd: RunningWorkersEntry | undefined;

async function cleanup(): Promise<void> {
  await workerd?.stop().catch(() => {});
  await topology?.stop().catch(() => {});
  killAll();
}

/** A cycling path over `ids` under `prefix` ("/hot/h-17", …). */
const cycle = (prefix: string, ids: string[]) => {
  let i = 0;
  return () => `${prefix}/${ids[i++ % ids.length]}`;
};
/** A path with an id never used before ("/new/n-123", …). */
const fresh = (prefix: string, tag: string) => {
  let i = 0;
  return () => `${prefix}/${tag}-${i++}`;
};

/** CPU seconds per second that Pinboard and Redis burn with no load (heartbeats, sweeper). */
async function idleRate(pids: { proxy: number; redis: number }, ms: number): Promise<IdleRate> {
  const w = new CpuWindow(pids);
  await sleep(ms);
  const d = w.delta();
  return { proxy: (d.proxy ?? 0) / (ms / 1000), redis: (d.redis ?? 0) / (ms / 1000) };
}

async function bench(args: BenchArgs): Promise<void> {
  const startedAt = new Date();
  const load0 = loadavg();
  const rows: ScenarioResult[] = [];
  const profiles: Record<string, ProfileSummary> = {};
  const extras: Record<string, unknown> = {};

  log("starting redis-server, Pinboard (Node entry), the base fleet and the baseline proxy");
  const top = (topology = await startTopology({ workers: BASE_WORKERS, namespaces: ["/hot", "/new"] }));
  const pb = top.pinboard;
  const redisPid = top.redis.process.pid!;
  const fleet = top.base;
  const w0 = fleet.workers[0]!;
  const pids = { proxy: pb.pid, redis: redisPid, worker: fleet.child.pid };
  extras.idleRssMb = { pinboard: mb(rssBytes(pb.pid)), baseline: mb(rssBytes(top.baseline.child.pid)), fleet: mb(rssBytes(fleet.child.pid)) };
  log(`idle RSS: Pinboard ${(mb(rssBytes(pb.pid)) ?? 0).toFixed(0)} MB, baseline proxy ${(mb(rssBytes(top.baseline.child.pid)) ?? 0).toFixed(0)} MB (Pinboard compiled, the baseline under tsx)`);
  const runner = new ScenarioRunner({ admin: top.admin, pinboard: pb, connections: args.connections, durationS: args.duration, log });

  log(`touching every bucket: new placements are refused for one lease (${LEASE_MS / 1000} s) from now`);
  const quarantineEnds = await startColdStartWindows(pb.url, "/hot", top.keys.shards, top.admin, top.keys, LEASE_MS);
  if (!args.skipWorkerd) {
    log("starting the Workers entry in workerd (Miniflare) with the REST bridge");
    workerd = await startWorkersEntry({ redisUrl: top.redis.url, bindings: pinboardSettings(top.secret) });
    for (let i = 0; i < 100 && (await fetch(`${workerd.url}/readyz`).then((r) => (void r.arrayBuffer(), r.status), () => 0)) !== 200; i++) await sleep(100);
  }

  // direct and baseline send what a forward carries (attestation, epoch): the worker does the same work.
  const directIds = Array.from({ length: args.hot }, (_, i) => `d-${i}`);
  const attested = async () => ({ [ATTESTATION_HEADER]: await signAttestation(w0.secret, { aud: w0.sessionId }, Date.now() / 1000), [EPOCH_HEADER]: "1" });
  const workerPath = new URL(w0.advertiseUrl).pathname;
  rows.push(...(await runner.rounds([{ name: "direct", url: fleet.url, path: cycle(`${workerPath}/hot`, directIds), headers: attested, pids: { redis: redisPid, worker: fleet.child.pid }, note: "clients straight to one worker, attested like a forward" }], 1)));

  const wait = quarantineEnds - Date.now() + 250;
  if (wait > 0) log(`waiting ${(wait / 1000).toFixed(1)} s more for the cold-start quarantine to end`);
  await sleep(Math.max(0, wait));
  const hotIds = Array.from({ length: args.hot }, (_, i) => `h-${i}`);
  log(`placing ${hotIds.length} hot ids through Pinboard`);
  await placeThroughPinboard(pb.url, "/hot", hotIds);

  // The resolve script straight against Redis: hot ids, or a new id per call with the affinity
  // hash Pinboard derives from the bench's client address.
  const clientAffinity = await affinityHash("127.0.0.1");
  const floor = async (name: string, ns: string, ids: string[] | { freshPrefix: string }) => {
    log(`${name}: ${args.duration} s, ${args.connections} in flight`);
    const common = { name, redisUrl: top.redis.url, keys: top.keys, ns, ids, leaseMs: LEASE_MS, balanceFactor: BALANCE_FACTOR, redisPid };
    const row = await runRedisFloor({ ...common, ...(Array.isArray(ids) ? {} : { affinity: clientAffinity }), connections: args.connections, durationS: args.duration, beforeMeasure: () => resetRedisStats(top.admin) });
    row.redisUsecPerEvalsha = (await commandStats(top.admin)).evalsha?.usecPerCall ?? null;
    rows.push(row);
    log(`${name}: ${row.rps.toFixed(0)} resolves/s, p50 ${row.p50Ms?.toFixed(2)} ms, Redis CPU ${row.cpuPer10k.redis?.toFixed(2)} s/10k`);
  };
  await floor("redis-floor", "/hot", hotIds);

  const hotLabel = args.hot === 1000 ? "1k" : String(args.hot);
  const hot: LoadSpec = { name: "pinboard-hot", url: pb.url, path: cycle("/hot", hotIds), pids, note: `${hotIds.length} ids placed beforehand (${hotLabel} placements in the namespace)` };
  const fresh10: LoadSpec = { name: "pinboard-new", url: pb.url, path: fresh("/new", "n"), pids, note: `a new id per request, ${BASE_WORKERS} live workers; client-IP affinity sends all to one worker` };
  const compared: LoadSpec[] = [
    { name: "baseline", url: top.baseline.url, path: cycle("/hot", directIds), headers: attested, pids: { proxy: top.baseline.child.pid, redis: redisPid, worker: fleet.child.pid }, note: "plain @hono/node-server + fetch proxy to the same worker" },
    hot,
    fresh10,
  ];
  if (workerd) {
    const wpids = { proxy: workerd.pid, redis: redisPid, worker: fleet.child.pid };
    const bridge = "the REST bridge's CPU is not counted";
    compared.push(
      { name: "workerd-hot", url: workerd.url, path: cycle("/hot", hotIds), pids: wpids, note: `the Workers entry in workerd, same hot ids; ${bridge}` },
      { name: "workerd-new", url: workerd.url, path: fresh("/new", "w"), pids: wpids, note: `the Workers entry in workerd, a new id per request; ${bridge}` },
    );
  }
  // The first load on a fresh process runs well below its steady state (JIT, heap sizing).
  log("warming Pinboard up: 2 s of pinboard-hot, not measured");
  await loadWindow(hot, { connections: args.connections, durationS: 2, warmupS: 0 });
  const idleAt10 = await idleRate({ proxy: pb.pid, redis: redisPid }, 1000);
  log(`${compared.map((s) => s.name).join(", ")}: ${args.rounds} interleaved round(s)`);
  rows.push(...(await runner.rounds(compared, args.rounds)));
  // Latency added by Pinboard, apart from queueing at saturation: baseline and pinboard-hot at one
  // offered rate that both sustain (half the slower one's saturated throughput).
  const saturated = (name: string) => rows.find((r) => r.name === name)?.rps ?? 0;
  const rate = Math.max(10, Math.round(0.25 * Math.min(saturated("baseline"), saturated("pinboard-hot"))));
  const atRate = (spec: LoadSpec): LoadSpec => ({ ...spec, name: `${spec.name}@${rate}/s`, rate, note: `${spec.note}; paced: ${rate} req/s spread evenly over ${args.connections} connections` });
  rows.push(...(await runner.rounds([atRate(compared[0]!), atRate(hot)], args.rounds)));
  await floor(`redis-floor-new@${BASE_WORKERS}`, "/new", { freshPrefix: "fn" });
  if (args.profile) {
    const dir = join(ROOT, "bench", "profiles");
    profiles["pinboard-hot"] = await runner.profile(hot, dir, "pinboard-hot");
    profiles["pinboard-new"] = await runner.profile(fresh10, dir, "pinboard-new");
    profiles[`pinboard-hot@${rate}/s`] = await runner.profile(atRate(hot), dir, "pinboard-hot-paced");
  }
  await workerd?.stop();
  workerd = undefined;

  let hotAtBigName = "pinboard-hot@big";
  if (args.placements > args.hot) {
    const filled = args.placements - args.hot;
    log(`filling /hot with ${filled} more placement rows (pipelined HSETs)`);
    const t0 = Date.now();
    await fillRows(top.admin, top.keys, "/hot", filled, fleet.workers.map((w) => w.sessionId));
    extras.fill = { rows: filled, seconds: (Date.now() - t0) / 1000 };
    const p = args.placements;
    hotAtBigName = `pinboard-hot@${p >= 1_000_000 ? `${p / 1_000_000}M` : p >= 1000 ? `${Math.round(p / 1000)}k` : p}`;
    rows.push(...(await runner.rounds([{ ...hot, name: hotAtBigName, note: `the same ${hotIds.length} hot ids among ${p} placements in the namespace` }], 1)));
  }

  log(`Redis memory per placement row over ${args.memoryRows} rows`);
  const memory = await memoryPerRow(top.admin, top.keys, args.memoryRows, fleet.workers.map((w) => w.sessionId));
  log(`  ${memory.bytesPerRow.toFixed(1)} B/row (sample row ${memory.sampleRow})`);

  let newAtManyName: string | null = null;
  let idleAtMany: IdleRate | undefined;
  if (args.workers > BASE_WORKERS) {
    const more = args.workers - BASE_WORKERS;
    log(`registering ${more} more workers on /new (one process, one HTTP server, path prefixes; budget ${args.registerBudget} s)`);
    await resetRedisStats(top.admin);
    const regCpu = new CpuWindow({ pinboard: pb.pid, redis: redisPid });
    const large = await top.startFleet("large", more, ["/new"], { onProgress: (n, s) => log(`  ${n} registered after ${s.toFixed(0)} s`), budgetMs: args.registerBudget * 1000 });
    const regUsed = regCpu.delta();
    const live = BASE_WORKERS + large.workers.length;
    extras.largeFleetRegistration = {
      requested: more,
      registered: large.workers.length,
      seconds: large.registerSeconds,
      pinboardCpuSeconds: regUsed.pinboard ?? null,
      redisCpuSeconds: regUsed.redis ?? null,
      commands: describeCommands(await commandStats(top.admin), large.workers.length),
      slowlog: await slowLog(top.admin),
    };
    log(`  ${large.workers.length}/${more} registered in ${large.registerSeconds.toFixed(1)} s; Redis CPU ${(regUsed.redis ?? 0).toFixed(1)} s, Pinboard CPU ${(regUsed.pinboard ?? 0).toFixed(1)} s`);
    // The background of a large fleet (heartbeats).
    const idleBefore = await idleRate({ proxy: pb.pid, redis: redisPid }, 2000);
    await floor(`redis-floor-new@${live}`, "/new", { freshPrefix: "fm" });
    newAtManyName = `pinboard-new@${live}`;
    const short = live < args.workers ? ` (asked for ${args.workers}: registration ran out of its ${args.registerBudget} s budget)` : "";
    const note = `a new id per request, ${live} live workers in /new${short}; worker CPU not counted (two fleet processes)`;
    rows.push(...(await runner.rounds([{ name: newAtManyName, url: pb.url, path: fresh("/new", "m"), pids: { proxy: pb.pid, redis: redisPid }, note }], 1)));
    // The background is read after the load (4 s): before it, the tail of the registrations may
    // still run; the window before is kept in the results for comparison.
    const idleAfter = await idleRate({ proxy: pb.pid, redis: redisPid }, 4000);
    idleAtMany = idleAfter;
    extras.idleAtManyWindows = { before: idleBefore, after: idleAfter };
    log(`  idle with ${live} workers: Pinboard ${idleAtMany.proxy.toFixed(3)} CPU s/s, Redis ${idleAtMany.redis.toFixed(3)} CPU s/s (heartbeats)`);
  }

  const byName = (name: string) => rows.find((r) => r.name === name);
  const derived = judge(byName, { bytesPerRow: memory.bytesPerRow, hotAtBigName, newAtManyName, idleAt10, idleAtMany, rate });
  console.log(`\n${scenarioTable(rows)}\n\n${targetTable(derived.targets)}`);
  for (const [name, s] of Object.entries(profiles)) {
    console.log(`\n${formatSummary(name, s)}`);
    if (s.longTasks) console.log(formatBusy(name, s.longTasks));
  }
  console.log("\nRedis commands per request (commandstats; script-internal commands counted by name):");
  for (const [name, detail] of Object.entries(runner.redisDetail)) console.log(`  ${name}: ${detail.commands}`);

  const results = {
    meta: {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      node: process.version,
      cpus: cpus().length,
      loadavgBefore: load0,
      loadavgAfter: loadavg(),
      flags: args,
      leaseTtlMs: LEASE_MS,
      coldStart: `every bucket touched first, then the default ${LEASE_MS / 1000} s lease waited out (the Workers entry started and direct ran meanwhile)`,
      caveat: "one run on a shared machine: other processes compete for the same cores; compare ratios within a run, not across runs",
    },
    scenarios: rows,
    ratios: derived.ratios,
    targets: derived.targets,
    idle: { at10: idleAt10, atMany: idleAtMany ?? null },
    redisMemory: memory,
    redis: runner.redisDetail,
    profiles,
    extras,
  };
  writeFileSync(resolve(ROOT, args.out), `${JSON.stringify(results, null, 2)}\n`);
  log(`wrote ${args.out}`);
}

let parsed: BenchArgs | "help";
try {
  parsed = parseBenchArgs(process.argv.slice(2));
} catch (err) {
  console.error(`${err instanceof Error ? err.message : String(err)}\n\n${USAGE}`);
  process.exit(2);
}
if (parsed === "help") {
  console.log(USAGE);
  process.exit(0);
}
installReaper(cleanup);
bench(parsed).then(
  async () => {
    await cleanup();
    process.exit(0);
  },
  async (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    await cleanup();
    process.exit(1);
  },
);
