/**
 * `npm run chaos`: a bounded fault campaign on this machine, judged by what the users' data saw.
 *
 *   npm run chaos                              10 minutes on one Redis
 *   npm run chaos -- --redis cluster           on a 3-primary Redis Cluster (failovers too)
 *   npm run chaos -- --profile ci              60 s, the failover SLO (.ci/run)
 *   npm run chaos -- --control                 the fence turned off: must report violations
 *   options: --minutes N, --seconds N, --seed N, --workers N, --clients N, --out DIR,
 *            --faults kill-worker,pause-worker,… (the kinds to choose from)
 *
 * Two Pinboard nodes share the placement Redis; 3–5 workers built on the worker library keep
 * their state in a durability Redis and write `u…` keys to a "user database" Redis through the
 * fence; clients append to and read lists and increment counters through both nodes while the
 * nemesis (faults.ts) kills, pauses and cuts. Writes chaos-report.json and chaos-availability.svg
 * to --out (default .tmp/chaos). Exit status 0 when the verdict is clean and every dead owner's
 * keys were served again within lease + 2 s (with --control: when it found violations), 1
 * otherwise, 2 on bad arguments.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { seededRandom } from "../seeded-random.ts";
import { AlarmWorkload, awaitAlarms } from "./alarm-workload.ts";
import { checkHistory } from "./checker.ts";
import { type FaultKind, Nemesis } from "./faults.ts";
import type { History, Served, UserDbWrite } from "./history.ts";
import { summarize, writeReport } from "./report.ts";
import { SocketWorkload } from "./socket-workload.ts";
import { FORWARD_TIMEOUT_MS, startTopology, stopTopology, type Topology } from "./topology.ts";
import { Workload } from "./workload.ts";

interface RunOptions {
  /** The fault kinds to choose from (--faults a,b); every kind the topology allows by default. */
  faults?: FaultKind[];
  seconds: number;
  redis: "single" | "cluster";
  control: boolean;
  seed: number;
  workers: number;
  clients: number;
  leaseTtlMs: number;
  out: string;
}

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
    seed: count(values.seed, Date.now() % 2 ** 31),
    workers: count(values.workers, ci ? 3 : 4),
    clients: count(values.clients, ci ? 8 : 16),
    leaseTtlMs: ci ? 3000 : 5000,
    out: values.out,
    ...(values.faults ? { faults: values.faults.split(",") as FaultKind[] } : {}),
  };
  for (const [name, value] of Object.entries(options))
    if (typeof value === "number" && !(Number.isInteger(value) && value > 0))
      throw new Error(`--${name}: a positive integer`);
  return options;
}

function faultKinds(options: RunOptions): FaultKind[] {
  if (options.faults) return options.faults;
  const common: FaultKind[] = [
    "kill-worker",
    "pause-worker",
    "proxy-pinboard-worker",
    "proxy-worker-store",
    "kill-pinboard",
    "drain-worker",
    // wind-down-keys and wind-down-namespace only through --faults until the wind-down overlap is
    // fixed: the old owner takes socket messages for up to ~1 s after Pinboard placed the key
    // elsewhere (NOTES-workload.md), so the socket check fails some runs on main.
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

/** The final state of every key, read until it answers (at most 60 s per key). */
async function finalReads(workload: Workload): Promise<Record<string, string[]>> {
  const reads: Record<string, string[]> = {};
  for (const key of [...workload.listKeys(), ...workload.counterKeys()]) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const op = await workload.request(key, "read", 0);
      if (op.outcome === "ok") {
        if (op.list) reads[key] = op.list;
        break;
      }
      if (Date.now() > deadline) throw new Error(`the final read of ${key} was never served: ${op.error}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  return reads;
}

function readJsonLines<T>(path: string): T[] {
  let text = "";
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => JSON.parse(line) as T);
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
    const sockets = new SocketWorkload({ nodes, sessions: 4, keys: 2, random });
    const alarms = new AlarmWorkload({ nodes, clients: 2, keys: 3, timeoutMs: FORWARD_TIMEOUT_MS + 5000, random });
    const otherKeys = [...sockets.keys(), ...alarms.keys()];
    const nemesis = new Nemesis(topology, {
      kinds: faultKinds(options),
      random,
      gapMs: [3000, 8000],
      operations: () => workload.operations,
      keys: [...workload.listKeys(), ...workload.counterKeys(), ...otherKeys],
    });
    await workload.warmUp(60_000, otherKeys);
    const started = Date.now();
    const deadline = started + options.seconds * 1000;
    await Promise.all([workload.run(deadline), sockets.run(deadline), alarms.run(deadline), nemesis.run(deadline)]);
    await healAll(topology);
    const reads = await finalReads(workload);
    await awaitAlarms(alarms.history, join(logDir, "alarms.jsonl"), ALARMS_AFTER_HEAL_MS);
    const ended = Date.now();
    await stopTopology(topology);
    return {
      operations: workload.operations,
      faults: nemesis.faults,
      ...(nemesis.failure ? { nemesisFailure: nemesis.failure } : {}),
      served: readJsonLines<Served>(topology.servedLog),
      userDb: readJsonLines<UserDbWrite>(topology.userDbLog),
      finalReads: reads,
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
  let options: RunOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    console.error(`chaos: ${err instanceof Error ? err.message : String(err)}`);
    return 2;
  }
  console.log(
    `chaos: ${options.seconds} s on ${options.redis} Redis, seed ${options.seed}${options.control ? ", fence OFF (control)" : ""}`,
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
  // The control run must find what the fence prevents; a real run must find nothing and meet the SLO.
  if (options.control) return verdict.valid ? 1 : 0;
  return verdict.valid && verdict.sloMet ? 0 : 1;
}

process.exitCode = await main();
