/**
 * `npm run chaos`: a bounded fault campaign on this machine, judged by what the users' data saw.
 *
 *   npm run chaos                              10 minutes on one Redis
 *   npm run chaos -- --redis cluster           on a 3-primary Redis Cluster (failovers too)
 *   npm run chaos -- --profile ci              60 s, the failover SLO (.ci/run)
 *   npm run chaos -- --control                 every protection layer off: must report violations
 *   npm run chaos -- --layers a,b              only these layers on (layers.ts): must stay clean,
 *                                              each layer kept on refusing at least once
 *   npm run chaos -- --mutants [a,b]           known-bad patches, each on 5 seeds (mutant-matrix.ts)
 *   options: --minutes N, --seconds N, --seed N, --workers N, --clients N, --out DIR,
 *            --faults kill-worker,pause-worker,overlap,… (the kinds to choose from; overlap: two at once)
 *
 * Two Pinboard nodes share the placement Redis; 3–5 workers built on the worker library keep
 * their state in a durability Redis and write `u…` keys to a "user database" Redis through the
 * fence; clients append to and read lists and increment counters through both nodes while the
 * nemesis (faults.ts) kills, pauses and cuts. Writes chaos-report.json and chaos-availability.svg
 * to --out (default .tmp/chaos). Exit status 0 when the verdict is clean and every dead owner's
 * keys were served again within lease + 2 s (with --control: when it found violations; with a
 * partial --layers: when clean and every layer kept on refused something), 1 otherwise, 2 on bad
 * arguments.
 */
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { seededRandom } from "../seeded-random.ts";
import { AlarmWorkload, awaitAlarms } from "./alarm-workload.ts";
import { checkHistory } from "./checker.ts";
import { type FaultKind, Nemesis, type NemesisChoice } from "./faults.ts";
import type { History, Served, UserDbWrite } from "./history.ts";
import { expectedKinds, LAYERS, type Layer, type LayerRefusal, parseLayers } from "./layers.ts";
import { runMutantMatrix } from "./mutant-matrix.ts";
import { readStores } from "./read-stores.ts";
import { summarize, writeReport } from "./report.ts";
import { SocketWorkload } from "./socket-workload.ts";
import { readJsonLines } from "./sync-log.ts";
import { FORWARD_TIMEOUT_MS, startTopology, stopTopology, type Topology } from "./topology.ts";
import { Workload } from "./workload.ts";

interface RunOptions {
  /** The fault kinds to choose from (--faults a,b); every kind the topology allows by default. */
  faults?: NemesisChoice[];
  seconds: number;
  redis: "single" | "cluster";
  control: boolean;
  /** The protection layers kept on: all by default, none with --control. */
  layers: Layer[];
  seed: number;
  workers: number;
  clients: number;
  leaseTtlMs: number;
  out: string;
  /** --profile ci: the nemesis opens with CI_OPENING. */
  ci: boolean;
}

/**
 * The CI profile's first faults, in every run: two kill -9s, a pause past the lease, and two pauses
 * timed from a renewal (half end at the worker's lease view, half just past it), the faults every
 * fence, the lease guard and the workers' synchronous logs exist for; then random draws.
 */
const CI_OPENING: FaultKind[] = [
  "kill-worker",
  "pause-worker",
  "pause-worker-edge",
  "kill-worker",
  "pause-worker-edge",
];

function parseOptions(argv: string[]): RunOptions {
  const { values } = parseArgs({
    args: argv,
    options: {
      minutes: { type: "string" },
      seconds: { type: "string" },
      redis: { type: "string", default: "single" },
      profile: { type: "string" },
      control: { type: "boolean", default: false },
      seed: { type: "string" },
      workers: { type: "string" },
      clients: { type: "string" },
      out: { type: "string", default: join(".tmp", "chaos") },
      faults: { type: "string" },
      layers: { type: "string" },
    },
  });
  if (values.redis !== "single" && values.redis !== "cluster") throw new Error("--redis: single or cluster");
  const ci = values.profile === "ci";
  if (values.profile !== undefined && !ci) throw new Error("--profile: only ci");
  const seconds = values.seconds
    ? Number(values.seconds)
    : values.minutes
      ? Number(values.minutes) * 60
      : ci
        ? 60
        : 600;
  const count = (v: string | undefined, d: number) => (v === undefined ? d : Number(v));
  const options: RunOptions = {
    seconds,
    redis: values.redis,
    control: values.control,
    layers: values.control ? [] : values.layers === undefined ? [...LAYERS] : parseLayers(values.layers),
    seed: count(values.seed, Date.now() % 2 ** 31),
    workers: count(values.workers, ci ? 3 : 4),
    clients: count(values.clients, ci ? 8 : 16),
    leaseTtlMs: ci ? 3000 : 5000,
    out: values.out,
    ci,
    ...(values.faults ? { faults: values.faults.split(",") as NemesisChoice[] } : {}),
  };
  for (const [name, value] of Object.entries(options))
    if (typeof value === "number" && !(Number.isInteger(value) && value > 0))
      throw new Error(`--${name}: a positive integer`);
  return options;
}

function faultKinds(options: RunOptions): NemesisChoice[] {
  if (options.faults) return options.faults;
  const common: NemesisChoice[] = [
    "kill-worker",
    "pause-worker",
    "proxy-pinboard-worker",
    "proxy-worker-store",
    "kill-pinboard",
    "pause-worker-edge",
    "clock-skew",
    "clock-rate",
    "clock-rate-past-margin",
    "proxy-heal-inflight",
    "overlap",
    "drain-worker",
    "wind-down-keys",
    "wind-down-namespace",
  ];
  return options.redis === "cluster"
    ? [...common, "cluster-failover", "redis-restart-empty"]
    : [...common, "proxy-pinboard-redis", "redis-restart-empty"];
}

/** Heals what a fault may have left (a paused process, a proxy not passing) and waits out a lease. */
async function healAll(topology: Topology): Promise<void> {
  for (const node of topology.pinboards) if (!node.process.running) await node.process.start();
  for (const w of topology.workers) {
    w.process.resume();
    w.advertiseProxy.setMode("pass");
    w.storeProxy.setMode("pass");
    if (!w.process.running) await w.process.start();
  }
  for (const node of topology.pinboards) node.redisProxy?.setMode("pass");
  await new Promise((r) => setTimeout(r, topology.options.leaseTtlMs + 2000));
}

/**
 * The final state of every key, read until it answers (at most 60 s for them all). A key never
 * served is left out: the checker reports it (missing-final-read) beside whatever else it finds.
 */
async function finalReads(workload: Workload): Promise<{ reads: Record<string, string[]>; unserved: string[] }> {
  const reads: Record<string, string[]> = {};
  const unserved: string[] = [];
  const deadline = Date.now() + 60_000;
  for (const key of [...workload.listKeys(), ...workload.counterKeys()]) {
    for (;;) {
      const op = await workload.request(key, "read", 0);
      if (op.outcome === "ok") {
        if (op.list) reads[key] = op.list;
        break;
      }
      if (Date.now() > deadline) {
        console.error(`chaos: the final read of ${key} was never served: ${op.error}`);
        unserved.push(key);
        break;
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return { reads, unserved };
}

/** How long, once the faults healed, every acknowledged alarm has to fire. */
const ALARMS_AFTER_HEAL_MS = 20_000;

async function campaign(options: RunOptions): Promise<History> {
  const logDir = join(options.out, "logs");
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  const random = seededRandom(options.seed);
  const topology = await startTopology({ ...options, noFence: options.control, logDir });
  try {
    const workload = new Workload({
      nodes: topology.pinboards.map((n) => n.url),
      clients: options.clients,
      listKeys: 12,
      userDbKeys: 4,
      counterKeys: 6,
      timeoutMs: FORWARD_TIMEOUT_MS + 5000,
      random,
    });
    const nodes = topology.pinboards.map((n) => n.url);
    const sockets = new SocketWorkload({ nodes, sessions: 8, keys: 4, random });
    const alarms = new AlarmWorkload({ nodes, clients: 2, keys: 3, timeoutMs: FORWARD_TIMEOUT_MS + 5000, random });
    const otherKeys = [...sockets.keys(), ...alarms.keys()];
    const nemesis = new Nemesis(topology, {
      kinds: faultKinds(options),
      random,
      gapMs: options.ci ? [1500, 4000] : [3000, 8000],
      // The CI profile opens with the faults every fence exists for, a kill -9 and a pause past
      // the lease, so that each 60 s run has them whatever the random draws (CI_OPENING).
      ...(options.ci ? { opening: CI_OPENING } : {}),
      operations: () => workload.operations,
      read: (key) => workload.request(key, "read"),
      keys: [...workload.listKeys(), ...workload.counterKeys(), ...otherKeys],
    });
    await workload.warmUp(60_000, otherKeys);
    const started = Date.now();
    const deadline = started + options.seconds * 1000;
    await Promise.all([workload.run(deadline), sockets.run(deadline), alarms.run(deadline), nemesis.run(deadline)]);
    await healAll(topology);
    const { reads, unserved } = await finalReads(workload);
    await awaitAlarms(alarms.history, join(logDir, "alarms.jsonl"), ALARMS_AFTER_HEAL_MS);
    const stored = await readStores(topology.userDb.url, topology.durable.url, {
      lists: workload.listKeys(),
      counters: workload.counterKeys(),
    });
    const ended = Date.now();
    await stopTopology(topology);
    return {
      operations: workload.operations,
      faults: nemesis.faults,
      ...(nemesis.failure ? { nemesisFailure: nemesis.failure } : {}),
      served: readJsonLines<Served>(topology.servedLog),
      userDb: readJsonLines<UserDbWrite>(topology.userDbLog),
      finalReads: reads,
      ...(unserved.length > 0 ? { unserved } : {}),
      answersLogged: true,
      stored,
      layers: options.layers,
      refusals: readJsonLines<LayerRefusal>(join(logDir, "layers.jsonl")),
      sockets: { ...sockets.history, taken: readJsonLines(join(logDir, "sockets.jsonl")) },
      alarms: { sets: alarms.history.sets, fired: readJsonLines(join(logDir, "alarms.jsonl")) },
      leaseTtlMs: options.leaseTtlMs,
      started,
      ended,
    };
  } catch (err) {
    await stopTopology(topology).catch(() => undefined);
    throw err;
  }
}

/**
 * The history beside the workers' own logs, for a look at what the verdict names (not kept by
 * CI): one operation per line, a read's list by its length (the lists of a 10-minute run add up
 * to gigabytes; the final reads are kept whole), and the faults.
 */
function writeHistoryLogs(dir: string, history: History): void {
  const lines = history.operations.map((op) => {
    const { list, ...rest } = op;
    return JSON.stringify(list ? { ...rest, listLength: list.length } : rest);
  });
  writeFileSync(join(dir, "operations.jsonl"), `${lines.join("\n")}\n`);
  const { faults, finalReads, leaseTtlMs, started, ended } = history;
  if (history.sockets) {
    const { messages, events } = history.sockets;
    writeFileSync(join(dir, "socket-client.jsonl"), [...events, ...messages].map((e) => JSON.stringify(e)).join("\n"));
  }
  if (history.alarms)
    writeFileSync(join(dir, "alarm-sets.jsonl"), history.alarms.sets.map((e) => JSON.stringify(e)).join("\n"));
  writeFileSync(join(dir, "run.json"), JSON.stringify({ faults, finalReads, leaseTtlMs, started, ended }));
}

async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  if (argv.some((arg) => arg === "--mutants" || arg.startsWith("--mutants="))) return runMutantMatrix(argv);
  let options: RunOptions;
  try {
    options = parseOptions(argv);
  } catch (err) {
    console.error(`chaos: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  const layers = options.layers.length === LAYERS.length ? "" : `, layers on: ${options.layers.join(",") || "none"}`;
  console.log(
    `chaos: ${options.seconds} s on ${options.redis} Redis, seed ${options.seed}${options.control ? ", fence OFF (control)" : layers}`,
  );
  const history = await campaign(options);
  const verdict = checkHistory(history);
  await writeReport(options.out, history, verdict);
  writeHistoryLogs(join(options.out, "logs"), history);
  console.log(summarize(verdict));
  if (history.nemesisFailure) {
    console.error(`chaos: the nemesis stopped early: ${history.nemesisFailure}`);
    return 1;
  }
  return exitStatus(options, verdict);
}

/**
 * The control run (no layer) must find what the layers prevent; a full run must find nothing and
 * meet the SLO; a partial one must find nothing with each layer it kept having refused something
 * (the layers left on did the work, not luck). Its SLO is reported, not judged.
 */
function exitStatus(options: RunOptions, verdict: ReturnType<typeof checkHistory>): number {
  if (options.layers.length === 0) return verdict.valid ? 1 : 0;
  if (options.layers.length === LAYERS.length) return verdict.valid && verdict.sloMet ? 0 : 1;
  const refusals = verdict.stats.layers?.refusals;
  const idle = options.layers.filter((layer) => !refusals || refusals[layer] === 0);
  if (idle.length > 0) console.error(`chaos: layers kept on but never refusing: ${idle.join(", ")}`);
  const expected = expectedKinds(options.layers);
  const unexpected = Object.entries(verdict.violationCounts).filter(([kind]) => !expected.includes(kind));
  if (!verdict.valid)
    console.log(
      `chaos: with these layers off, expected: ${expected.join(", ") || "nothing"}; the rest: ${unexpected.map(([k, n]) => `${k} ${n}`).join(", ") || "none"}`,
    );
  return unexpected.length === 0 && idle.length === 0 ? 0 : 1;
}

process.exitCode = await main();
