/**
 * `npm run bench:gates`: what the worker library's input and output gates cost per request,
 * measured on the worker alone (no Pinboard in front): wrk drives a worker process
 * (gates-worker-main.ts, the README's Counter) with its gates on (createWorker's defaults), off
 * (allowConcurrency + allowUnconfirmed) and bare (off, and AsyncLocalStorage never enabled in
 * the process: what the gates' machinery costs beyond the gates), one process per mode, all up
 * at once and loaded in turn, so each window of one mode has a window of the others beside it.
 *
 * Loads, each with one token per path (jti-less, signed when the window starts) and
 * Pinboard-Epoch: 1:
 *   read   GET /counter/c{i} over --ids ids: memory hits after the first
 *   write  GET /counter/c{i}/incr over the same ids: one put each
 *   hot    GET /counter/hot0/incr: one instance, every request at its gate
 *   stored GET /counter/c{i}/stored over the same ids: one storage read each (a fenced read: the
 *          values and the stored epoch), what an instance that keeps no state in memory pays
 * Per store (memory, and Redis on a private redis-server), per round (fresh worker processes),
 * per load: the modes in order, reversed on odd rounds; each window is --warmup seconds of the
 * load unmeasured, then --duration seconds measured, with the worker's CPU seconds (/proc)
 * before and after.
 * The machine is shared: read the ratios (taken round by round, then the median), not the
 * absolute figures.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { dirname, resolve } from "node:path";
import { parseArgs } from "node:util";
import { ATTESTATION_HEADER, EPOCH_HEADER } from "../src/contract/header-names.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../src/runtime/node/dev-store/embedded-redis.ts";
import { type Child, installReaper, killAll, killWhenBenchDies, ROOT, spawnNode } from "./children.ts";
import {
  type Comparison,
  compare,
  comparisonTable,
  type LoadName,
  rows,
  rowTable,
  type Sample,
} from "./gates-report.ts";
import type { GateMode, StoreKind } from "./gates-worker-main.ts";
import type { PathPlan } from "./paths.ts";
import { cpuSeconds } from "./proc-stats.ts";
import { reusableAttestation } from "./reusable-attestation.ts";
import { removeWrkScripts, requireWrk, runWrk, type WrkHeaders } from "./wrk.ts";

const USAGE = `npm run bench:gates -- [flags]

  --duration S       measured seconds per window, whole (default 5)
  --warmup S         unmeasured seconds of the same load before each window (default 2)
  --connections N    wrk connections (default 32)
  --rounds N         windows per mode and load; odd rounds run the modes in reverse (default 3)
  --ids N            instances the read and write loads cycle over (default 100)
  --stores LIST      memory,redis (default both)
  --loads LIST       read,write,hot,stored (default read,write,hot)
  --modes LIST       on,off,bare (default all)
  --out FILE         the JSON results (default .tmp/bench-gates.json)
  --tables FILES     print the tables of earlier runs' JSON (comma-separated: their rounds pooled), and run nothing`;

const SECRET = "gates-bench-secret-0123456789abcdef";
const AUDIENCE = "gates-bench";
const EPOCH = "1";

interface Settings {
  durationS: number;
  warmupS: number;
  connections: number;
  rounds: number;
  ids: number;
  stores: StoreKind[];
  loads: LoadName[];
  modes: GateMode[];
  out: string;
  /** Print the tables of these earlier runs' JSON (rounds pooled) instead of running. */
  tablesOf: string[] | undefined;
}

interface Worker {
  mode: GateMode;
  child: Child;
  url: string;
  pid: number;
}

function list<T extends string>(flag: string, value: string, allowed: readonly T[]): T[] {
  const items = value.split(",").map((s) => s.trim());
  const wrong = items.find((s) => !allowed.includes(s as T));
  if (wrong !== undefined || items.length === 0)
    throw new Error(`--${flag}: ${JSON.stringify(wrong)} is not one of ${allowed.join(", ")}`);
  return items as T[];
}

function whole(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < min) throw new Error(`--${flag} takes a whole number from ${min}, not ${value}`);
  return n;
}

function settings(argv: string[]): Settings | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      duration: { type: "string", default: "5" },
      warmup: { type: "string", default: "2" },
      connections: { type: "string", default: "32" },
      rounds: { type: "string", default: "3" },
      ids: { type: "string", default: "100" },
      stores: { type: "string", default: "memory,redis" },
      loads: { type: "string", default: "read,write,hot" },
      modes: { type: "string", default: "on,off,bare" },
      out: { type: "string", default: ".tmp/bench-gates.json" },
      tables: { type: "string" },
      help: { type: "boolean", default: false },
    },
  });
  if (values.help) return null;
  return {
    durationS: whole("duration", values.duration, 1),
    warmupS: whole("warmup", values.warmup, 0),
    connections: whole("connections", values.connections, 1),
    rounds: whole("rounds", values.rounds, 1),
    ids: whole("ids", values.ids, 1),
    stores: list("stores", values.stores, ["memory", "redis"] as const),
    loads: list("loads", values.loads, ["read", "write", "hot", "stored"] as const),
    modes: list("modes", values.modes, ["on", "off", "bare"] as const),
    out: resolve(ROOT, values.out),
    tablesOf: values.tables?.split(",").map((f) => resolve(f)),
  };
}

function plan(load: LoadName, ids: number): PathPlan {
  if (load === "read") return { kind: "cycle", prefix: "/counter/c", count: ids, suffix: "" };
  if (load === "write") return { kind: "cycle", prefix: "/counter/c", count: ids, suffix: "/incr" };
  if (load === "stored") return { kind: "cycle", prefix: "/counter/c", count: ids, suffix: "/stored" };
  return { kind: "cycle", prefix: "/counter/hot", count: 1, suffix: "/incr" };
}

/** The attestation of each path of the cycle, signed now, and the epoch. */
function headers(p: PathPlan): WrkHeaders {
  if (p.kind !== "cycle") throw new Error("attested loads cycle their paths");
  const paths = Array.from({ length: p.count }, (_, i) => `${p.prefix}${i}${p.suffix}`);
  return {
    [ATTESTATION_HEADER]: paths.map((path) => reusableAttestation(SECRET, AUDIENCE, path, EPOCH)),
    [EPOCH_HEADER]: EPOCH,
  };
}

async function startWorker(
  mode: GateMode,
  store: StoreKind,
  redis: EmbeddedRedis | undefined,
  round: number,
): Promise<Worker> {
  const child = spawnNode(`gates-worker-${store}-${mode}-${round}`, "bench/gates-worker-main.ts", {
    BENCH_SECRET: SECRET,
    BENCH_AUDIENCE: AUDIENCE,
    BENCH_GATES: mode,
    BENCH_STORE: store,
    ...(redis ? { BENCH_REDIS_URL: redis.url, BENCH_PREFIX: `gates-${mode}-${round}:` } : {}),
  });
  const ready = await child.next<{ url: string }>((m) => m.bench === "ready", 60_000);
  return { mode, child, url: ready.url, pid: child.pid };
}

/** One window on one worker: the warm-up, then the measured run with the worker's CPU around it. */
async function window(o: Settings, w: Worker, store: StoreKind, load: LoadName, round: number): Promise<Sample> {
  const p = plan(load, o.ids);
  const run = (durationS: number) =>
    runWrk({ url: w.url, plan: p, headers: headers(p), connections: o.connections, durationS });
  if (o.warmupS > 0) await run(o.warmupS);
  const before = cpuSeconds(w.pid);
  const r = await run(o.durationS);
  const after = cpuSeconds(w.pid);
  if (before === null || after === null) throw new Error(`${w.child.name} is gone:\n${w.child.log()}`);
  return {
    store,
    load,
    mode: w.mode,
    round,
    requests: r.requests,
    rps: r.requests / r.seconds,
    p50Ms: r.p50Ms,
    p99Ms: r.p99Ms,
    cpuUsPerRequest: ((after - before) * 1e6) / Math.max(1, r.requests),
    non2xx: r.non2xx,
    errors: r.errors,
  };
}

/**
 * Waits until the fresh workers have finished starting (the loader's compiles, the JIT of the
 * startup code): half a second in which they used less than 10 ms of CPU together, 15 s at most.
 * Otherwise the first window of a round pays for the processes started after it.
 */
async function settled(workers: Worker[]): Promise<void> {
  const total = () => workers.reduce((sum, w) => sum + (cpuSeconds(w.pid) ?? 0), 0);
  let last = total();
  for (const deadline = Date.now() + 15_000; Date.now() < deadline; ) {
    await new Promise((r) => setTimeout(r, 500));
    const now = total();
    if (now - last < 0.01) return;
    last = now;
  }
}

/**
 * Each round starts its own worker processes (a process's own speed, from its memory layout and
 * where it lands, differs by tens of percent on a shared machine): one per mode, each loaded in
 * turn with every load, the modes in reverse order on odd rounds.
 */
async function measureStore(o: Settings, store: StoreKind, redis: EmbeddedRedis | undefined): Promise<Sample[]> {
  const samples: Sample[] = [];
  for (let round = 0; round < o.rounds; round++) {
    const workers: Worker[] = [];
    try {
      for (const mode of o.modes) workers.push(await startWorker(mode, store, redis, round));
      await settled(workers);
      const order = round % 2 === 0 ? workers : [...workers].reverse();
      for (const load of o.loads) {
        for (const w of order) {
          const s = await window(o, w, store, load, round);
          samples.push(s);
          const bad = s.non2xx + s.errors ? `  ${s.non2xx} non-2xx, ${s.errors} socket errors` : "";
          console.log(
            `  ${store} round ${round + 1} ${load} gates ${w.mode}: ${s.rps.toFixed(0)} req/s, p50 ${s.p50Ms.toFixed(2)} ms, ${s.cpuUsPerRequest.toFixed(1)} CPU µs/req${bad}`,
          );
        }
      }
    } finally {
      for (const w of workers) await w.child.stop();
    }
  }
  return samples;
}

async function main(argv: string[]): Promise<void> {
  const o = settings(argv);
  if (!o) return console.log(USAGE);
  if (o.tablesOf) return void printTables(o.tablesOf.flatMap(earlierSamples));
  const wrk = requireWrk();
  let redis: EmbeddedRedis | undefined;
  installReaper(async () => {
    killAll();
    await redis?.stop();
  });
  const startedAt = new Date().toISOString();
  console.log(
    `${wrk}; node ${process.version}; ${cpus().length} cores; load average ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
  console.log(
    `-c${o.connections}, ${o.warmupS} s warm-up + ${o.durationS} s per window, ${o.rounds} rounds, ${o.ids} ids`,
  );
  const samples: Sample[] = [];
  try {
    for (const store of o.stores) {
      if (store === "redis" && !redis) {
        redis = await startEmbeddedRedis();
        if (redis.process.pid !== undefined) killWhenBenchDies(redis.process.pid);
      }
      samples.push(...(await measureStore(o, store, redis)));
    }
  } finally {
    await redis?.stop();
    removeWrkScripts();
  }
  report(o, samples, { startedAt, wrk, loadAverageAfter: loadavg() });
}

/** An earlier run's samples, their rounds numbered apart from other runs' (run n: n × 1000 + round). */
function earlierSamples(file: string, run: number): Sample[] {
  const { samples } = JSON.parse(readFileSync(file, "utf8")) as { samples: Sample[] };
  return samples.map((s) => ({ ...s, round: run * 1000 + s.round }));
}

/** Prints the medians and the comparisons of the modes that ran; returns the comparisons. */
function printTables(samples: Sample[]): Comparison[] {
  const modes = new Set(samples.map((s) => s.mode));
  const pairs: Array<[GateMode, GateMode]> = [
    ["on", "off"],
    ["off", "bare"],
    ["on", "bare"],
  ];
  const comparisons = pairs.flatMap(([a, b]) => (modes.has(a) && modes.has(b) ? compare(samples, a, b) : []));
  const rounds = new Set(samples.map((s) => s.round)).size;
  console.log(`\nMedians over ${rounds} rounds (worker process CPU, every thread):\n`);
  console.log(rowTable(rows(samples)));
  console.log("\nRatios and differences, round by round, then the median:\n");
  console.log(comparisonTable(comparisons));
  return comparisons;
}

function report(o: Settings, samples: Sample[], about: Record<string, unknown>): void {
  const comparisons = printTables(samples);
  mkdirSync(dirname(o.out), { recursive: true });
  const { out, ...asRun } = o;
  writeFileSync(
    out,
    `${JSON.stringify({ ...about, node: process.version, cores: cpus().length, settings: asRun, rows: rows(samples), comparisons, samples }, null, 2)}\n`,
  );
  console.log(`\nwrote ${out}`);
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
    killAll();
    process.exit(1);
  },
);
