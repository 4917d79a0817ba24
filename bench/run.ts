/**
 * `npm run bench`: Pinboard side by side with a plain node:http proxy, nginx (when installed)
 * and the worker itself, each with Content-Length and chunked answers, load from wrk; then the
 * paced latency, 1 against 2 Pinboard processes, the Redis floors and the scaling checks, in one
 * run on one machine. bench/README.md says what each row means; `--help` lists the flags.
 *
 * Cold start: new placements are refused for one lease (15 s, the production default) after a
 * bucket's first resolve. The bench touches every bucket right after start-up and waits that
 * lease out, starting the Workers entry and checking every front's answers in the meantime.
 */

import { writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";
import { ATTESTATION_HEADER, EPOCH_HEADER } from "../src/contract/header-names.ts";
import { type BenchArgs, parseBenchArgs, type Section, USAGE } from "./args.ts";
import { formatBusy } from "./busy-stretches.ts";
import { installReaper, killAll, ROOT } from "./children.ts";
import { checkFraming, describeFraming, type FramingSeen } from "./framing-check.ts";
import { frontLabels, frontTable, headroomLines, pacedTable, processTable } from "./front-tables.ts";
import { frontSpecs, pacedSpecs, workerdPacedSpecs } from "./fronts.ts";
import { type LoadSpec, loadWindow, mb } from "./load.ts";
import { nginxVersion } from "./nginx.ts";
import { type PathPlan, suffixFor } from "./paths.ts";
import { compareProcesses } from "./pinboard-processes.ts";
import { memoryPerRow, placeThroughPinboard, startColdStartWindows } from "./placements.ts";
import { rssBytes } from "./proc-stats.ts";
import { formatSummary, type ProfileSummary } from "./profile-summary.ts";
import { floorRunner } from "./redis-floor.ts";
import { rowName, type ScenarioResult, scenarioTable, targetTable } from "./report.ts";
import { reusableAttestation } from "./reusable-attestation.ts";
import { hotAtManyPlacements, idleRate, newAtManyWorkers } from "./scaling.ts";
import { ScenarioRunner } from "./scenarios.ts";
import { type IdleRate, judge } from "./targets.ts";
import { LEASE_MS, pinboardSettings, startTopology, type Topology } from "./topology.ts";
import { type RunningWorkersEntry, startWorkersEntry, untilReady } from "./workers-entry.ts";
import { removeWrkScripts, requireWrk, type WrkHeaders } from "./wrk.ts";

const BASE_WORKERS = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const log = (msg: string) => console.error(`[bench ${new Date().toISOString().slice(11, 19)}] ${msg}`);

let topology: Topology | undefined;
let workerd: RunningWorkersEntry | undefined;
/** The Workers entry again, behind a REST bridge that adds REGIONAL_REDIS_MS to every call. */
let workerdRegional: RunningWorkersEntry | undefined;
/** What a regional Upstash adds to a Redis call seen from a Worker, about. */
const REGIONAL_REDIS_MS = 2;
/** The paced rate of the workerd rows: well under what workerd sustains here (~1200 req/s). */
const WORKERD_PACED_RATE = 200;

async function cleanup(): Promise<void> {
  await workerd?.stop().catch(() => {});
  await workerdRegional?.stop().catch(() => {});
  await topology?.stop().catch(() => {});
  removeWrkScripts();
  killAll();
}

async function bench(args: BenchArgs, wrkVersion: string): Promise<void> {
  const startedAt = new Date();
  const load0 = loadavg();
  const on = (section: Section) => args.sections.has(section);
  const rows: ScenarioResult[] = [];
  const profiles: Record<string, ProfileSummary> = {};
  const extras: Record<string, unknown> = { wrk: wrkVersion };
  const byName = (name: string) => rows.find((r) => r.name === name);

  if (nginxVersion() === null)
    log("nginx is not installed: its rows are skipped (apt-get install nginx-light to add them)");
  log(
    `starting redis-server, Pinboard (Node entry), the base fleet, the plain node:http proxy${nginxVersion() === null ? "" : " and nginx"}`,
  );
  const top = (topology = await startTopology({ workers: BASE_WORKERS, namespaces: ["/hot", "/new"] }));
  const pb = top.pinboard;
  const redisPid = top.redis.process.pid!;
  const rss = (pid: number) => mb(rssBytes(pid));
  extras.idleRssMb = { pinboard: rss(pb.pid), plain: rss(top.plain.child.pid), fleet: rss(top.base.child.pid) };
  log(
    `idle RSS: Pinboard ${(rss(pb.pid) ?? 0).toFixed(0)} MB (compiled), plain proxy ${(rss(top.plain.child.pid) ?? 0).toFixed(0)} MB (under tsx)`,
  );
  const runner = new ScenarioRunner({
    admin: top.admin,
    pinboard: pb,
    metered: [
      pb,
      { child: top.plain.child, pid: top.plain.child.pid },
      { child: top.plainResolve.child, pid: top.plainResolve.child.pid },
    ],
    connections: args.connections,
    durationS: args.duration,
    log,
  });

  log(`touching every bucket: new placements are refused for one lease (${LEASE_MS / 1000} s) from now`);
  const quarantineEnds = await startColdStartWindows(pb.url, "/hot", top.keys.shards, top.admin, top.keys, LEASE_MS);
  if (on("workerd")) {
    log("starting the Workers entry in workerd (Miniflare) with the REST bridge");
    workerd = await startWorkersEntry({ redisUrl: top.redis.url, bindings: pinboardSettings(top.secret) });
    log(`starting a second one whose REST bridge adds ${REGIONAL_REDIS_MS} ms to every Redis call`);
    workerdRegional = await startWorkersEntry({
      redisUrl: top.redis.url,
      bindings: pinboardSettings(top.secret),
      bridgeDelayMs: REGIONAL_REDIS_MS,
      otherPids: workerd.pid === undefined ? [] : [workerd.pid],
    });
    for (const entry of [workerd, workerdRegional]) await untilReady(entry.url, sleep);
  }

  // Everything in front of worker 0 sends what a forward carries: an attestation naming the call
  // (method, path, epoch) and Pinboard-Epoch, so the worker does the same checks behind every
  // front. wrk cannot sign per request: each path of a cycle gets its token, signed when the
  // window starts, without a jti (as from a Pinboard before single-use tokens, which the worker
  // accepts more than once unless requireBoundAttestation); Pinboard's own rows pay the worker's
  // jti memory besides (about 2 µs a call).
  const w0 = top.base.workers[0]!;
  const workerPath = new URL(w0.advertiseUrl).pathname;
  const headersFor = (path: string): Record<string, string> => ({
    [ATTESTATION_HEADER]: reusableAttestation(w0.secret, w0.sessionId, workerRelative(path, workerPath), BENCH_EPOCH),
    [EPOCH_HEADER]: BENCH_EPOCH,
  });
  const attested = async (plan: PathPlan): Promise<WrkHeaders> => {
    if (plan.kind !== "cycle") throw new Error("attested loads cycle their paths");
    const paths = Array.from({ length: plan.count }, (_, k) => `${plan.prefix}${k}${plan.suffix}`);
    return {
      [ATTESTATION_HEADER]: paths.map((path) => headersFor(path)[ATTESTATION_HEADER]!),
      [EPOCH_HEADER]: BENCH_EPOCH,
    };
  };
  const framing: FramingSeen[] = await checkFraming([
    { front: "direct", url: top.base.url, path: (m) => `${workerPath}/hot/d-0${suffixFor(m)}`, headers: headersFor },
    { front: "plain", url: top.plain.url, path: (m) => `/hot/d-0${suffixFor(m)}`, headers: headersFor },
    ...(top.nginx
      ? [
          {
            front: "nginx",
            url: top.nginx.url,
            path: (m: "length" | "chunked") => `/hot/d-0${suffixFor(m)}`,
            headers: headersFor,
          },
        ]
      : []),
  ]);

  const wait = quarantineEnds - Date.now() + 250;
  if (wait > 0) log(`waiting ${(wait / 1000).toFixed(1)} s more for the cold-start quarantine to end`);
  await sleep(Math.max(0, wait));
  const hotIds = Array.from({ length: args.hot }, (_, i) => `h-${i}`);
  log(`placing ${hotIds.length} hot ids through Pinboard`);
  await placeThroughPinboard(pb.url, "/hot", hotIds);
  framing.push(
    ...(await checkFraming([
      {
        front: "plain-resolve",
        url: top.plainResolve.url,
        path: (m) => `/hot/h-0${suffixFor(m)}`,
        headers: headersFor,
      },
      { front: "pinboard-hot", url: pb.url, path: (m) => `/hot/h-0${suffixFor(m)}` },
    ])),
  );
  log(`answers as the client receives them (mode → status, framing, body):\n${describeFraming(framing)}`);
  extras.framing = framing;

  const floor = floorRunner({ top, args, rows, log });
  if (on("floors")) await floor("redis-floor", "/hot", hotIds);

  const specs = frontSpecs({
    top,
    workerd,
    workerdRegional,
    hotCount: args.hot,
    attested,
    baseWorkers: BASE_WORKERS,
  });
  const hot = specs.find((s) => s.name === rowName("pinboard-hot", "length"))!;
  const fresh10 = specs.find((s) => s.name === rowName("pinboard-new", "length"))!;
  // The first load on a fresh process runs well below its steady state (JIT, heap sizing).
  log("warming Pinboard up: 2 s of pinboard-hot, not measured");
  await loadWindow(hot, { connections: args.connections, durationS: 2, warmupS: 0 });
  const idleAt10: IdleRate = await idleRate({ proxy: pb.pid, redis: redisPid }, 1000);

  let rate: number | null = null;
  const isWorkerd = (s: LoadSpec) => s.front?.startsWith("workerd") ?? false;
  const compared = specs.filter((s) => (isWorkerd(s) ? on("workerd") : on("fronts")));
  if (compared.length) {
    log(`${compared.map((s) => s.name).join(", ")}: ${args.rounds} interleaved round(s)`);
    rows.push(...(await runner.rounds(compared, args.rounds)));
  }
  if (on("paced") && on("fronts")) {
    // The latency a front adds apart from queueing at saturation: every proxy at one offered
    // rate all of them sustain, a quarter of the slower side's saturated throughput.
    rate = Math.max(
      10,
      Math.round(0.25 * Math.min(byName(hot.name)?.rps ?? 0, byName(rowName("plain", "length"))?.rps ?? 0)),
    );
    rows.push(...(await runner.rounds(pacedSpecs(specs, rate, args.connections), args.rounds, args.pacedDuration)));
  } else if (on("paced")) log("paced rows skipped: their rate comes from the fronts section's saturated rows");
  if (on("floors")) await floor(`redis-floor-new@${BASE_WORKERS}`, "/new", { freshPrefix: "fn" });
  if (args.profile) {
    const dir = join(ROOT, "bench", "profiles");
    profiles["pinboard-hot"] = await runner.profile(hot, dir, "pinboard-hot");
    profiles["pinboard-new"] = await runner.profile(fresh10, dir, "pinboard-new");
    if (rate !== null)
      profiles[`pinboard-hot@${rate}/s`] = await runner.profile({ ...hot, rate }, dir, "pinboard-hot-paced");
  }
  if (on("workerd")) {
    // One round trip more per forward shows as the delay once, at a rate both sustain unqueued.
    const paced = workerdPacedSpecs(specs, WORKERD_PACED_RATE, args.connections);
    rows.push(...(await runner.rounds(paced, args.rounds, args.pacedDuration)));
  }
  await Promise.all([workerd?.stop(), workerdRegional?.stop()]);
  workerd = undefined;
  workerdRegional = undefined;

  if (on("processes")) {
    log("starting the Node entry (dist/src/node.js) with PINBOARD_PROCESSES=2 on the same Redis and fleet");
    const compared = await compareProcesses(top, runner, hot, {
      connections: args.connections,
      rounds: args.rounds,
      log,
    });
    extras.processes = { asked: 2, processesInTree: compared.processCount };
    rows.push(...compared.rows);
  }

  const scaling = { top, runner, args, log, extras };
  let hotAtBigName = `${hot.name}@big`;
  if (on("scaling") && args.placements > args.hot) {
    const [row] = await hotAtManyPlacements(scaling, hot);
    rows.push(row!);
    hotAtBigName = row!.name;
  }

  let memory: Awaited<ReturnType<typeof memoryPerRow>> | null = null;
  if (on("memory")) {
    log(`Redis memory per placement row over ${args.memoryRows} rows`);
    memory = await memoryPerRow(
      top.admin,
      top.keys,
      args.memoryRows,
      top.base.workers.map((w) => w.sessionId),
    );
    log(`  ${memory.bytesPerRow.toFixed(1)} B/row (sample row ${memory.sampleRow})`);
  }

  let newAtManyName: string | null = null;
  let idleAtMany: IdleRate | undefined;
  if (on("scaling") && args.workers > BASE_WORKERS) {
    const many = await newAtManyWorkers(scaling, BASE_WORKERS, (name) => floor(name, "/new", { freshPrefix: "fm" }));
    rows.push(...many.rows);
    newAtManyName = many.rows[0]!.name;
    idleAtMany = many.idle;
  }

  const derived = judge(byName, {
    bytesPerRow: memory?.bytesPerRow ?? null,
    hotAtBigName,
    newAtManyName,
    idleAt10,
    ...(idleAtMany ? { idleAtMany } : {}),
    rate,
  });
  const fronts = frontLabels(top.nginx);
  const sections = [
    `fronts × answer shape (${args.connections} connections, wrk -t1; each figure the median of ${args.rounds} round(s); × plain: req/s over the plain node:http proxy's)`,
    frontTable(byName, fronts),
    ...(top.nginx ? [] : ["nginx: not installed, no rows (apt-get install nginx-light)"]),
    headroomLines(byName, fronts).join("\n"),
    processTable(byName),
    rate === null ? null : pacedTable(byName, fronts, rate),
    on("workerd") ? pacedTable(byName, fronts, WORKERD_PACED_RATE) : null,
    "every scenario:",
    scenarioTable(rows),
    "targets (ratios and differences from this run):",
    targetTable(derived.targets),
  ];
  console.log(`\n${sections.filter((s): s is string => s !== null).join("\n\n")}`);
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
      flags: { ...args, sections: [...args.sections] },
      loadGenerator: `${wrkVersion}: wrk -t1 -c${args.connections} --latency with a Lua script per window; paced rows add a random think time per request (delay())`,
      nginx: top.nginx ? { version: top.nginx.version, workerProcesses: top.nginx.workerProcesses } : null,
      leaseTtlMs: LEASE_MS,
      coldStart: `every bucket touched first, then the default ${LEASE_MS / 1000} s lease waited out (the Workers entry started meanwhile)`,
      caveat:
        "one run on a shared machine: other processes compete for the same cores; compare ratios within a run, not across runs",
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
const wrkVersion = requireWrk();
installReaper(cleanup);
bench(parsed, wrkVersion).then(
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

/** The epoch the attested loads name: the worker holds no epoch for the `d-…` ids, so any is current. */
const BENCH_EPOCH = "1";

/** A path as the worker reads it relative to its advertise URL (the direct row's paths carry its base). */
function workerRelative(path: string, workerPath: string): string {
  return path.startsWith(`${workerPath}/`) ? path.slice(workerPath.length) : path;
}
