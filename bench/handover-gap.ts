/**
 * `npx tsx bench/handover-gap.ts`: what a client sees when the worker owning its ids stops.
 *
 * Per run: a Pinboard node (`src/node.ts`) on a private redis-server, two workers of the example
 * worker (`examples/worker.ts`, durable state in a second redis-server), and a client loop per id
 * (`--ids`, 50) that increments the id's counter, pauses 20–50 ms, and does it again. Once every
 * id answered, the worker owning most ids is stopped: SIGTERM (its graceful stop, which hands
 * its instances over) or SIGKILL (`kill -9`: the ids wait for its lease, `--lease-ms`, 15 s).
 * Reported for the stopped worker's ids: the longest time between two consecutive 2xx answers of
 * one id (normal cadence: 20–50 ms plus a round trip), as p50 / p99 / max across ids, and the
 * answers that were not 2xx, by status and body; beside it the same measure over the 3 s before
 * the stop, which is what the machine's load alone gives.
 *
 *   npx tsx bench/handover-gap.ts                     # 3 runs of SIGTERM, then 3 of kill -9
 *   npx tsx bench/handover-gap.ts --mode sigterm --runs 1 --ids 20
 */
import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { mintCredential } from "../src/auth/mint.ts";
import { Keys, SINGLE_ENV } from "../src/redis/keys.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { reapOnExit } from "../src/runtime/node/process/reap-on-exit.ts";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SECRET = "handover-bench-passport-secret-0123456789";
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const { values: flags } = parseArgs({
  options: {
    ids: { type: "string", default: "50" },
    runs: { type: "string", default: "3" },
    mode: { type: "string", default: "both" },
    "lease-ms": { type: "string", default: "15000" },
  },
});
const IDS = Array.from({ length: Number(flags.ids) }, (_, i) => `id${i}`);
const LEASE_MS = Number(flags["lease-ms"]);
/** Traffic measured before the stop, as the baseline of the gap. */
const BASELINE_MS = 3000;

interface Proc {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
}

function start(script: string, env: Record<string, string>): Proc {
  const child = spawn(process.execPath, ["--import", "tsx", script], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  reapOnExit(child);
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  return { child, output: () => output, exited };
}

async function waitFor<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, ms = 30_000) {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(50);
  }
}

/** Pinboard and two example workers; the owner of a row is read from Redis. */
async function startFleet(redis: EmbeddedRedis, durable: EmbeddedRedis) {
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const pinboard = start("src/node.ts", {
    PORT: String(port),
    HOST: "127.0.0.1",
    REDIS_URL: redis.url,
    PINBOARD_PASSPORT_SECRET: SECRET,
    PINBOARD_LEASE_TTL_MS: String(LEASE_MS),
    PINBOARD_LOG_LEVEL: "warn",
    // Each id's loop poses as its own client address, so affinity spreads the ids over both workers.
    PINBOARD_TRUSTED_PROXIES: "127.0.0.1,::1,::ffff:127.0.0.1",
  });
  await waitFor("pinboard ready", async () =>
    (await fetch(`${url}/readyz`).catch(() => null))?.ok ? true : undefined,
  );
  const client = new Redis(redis.url);
  for (let b = 0; b < 16; b++) await client.set(`pinboard:{${b}}:boot_time`, "0"); // past its cold start
  const token = await mintCredential({
    secret: SECRET,
    sub: "bench",
    scopes: ["pinboard:worker"],
    pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
  });
  const workers = new Map<string, Proc & { sessionId: string }>();
  for (const name of ["worker-a", "worker-b"]) {
    const proc = start("examples/worker.ts", {
      PINBOARD_URL: url,
      PINBOARD_WORKER_TOKEN: token,
      DURABLE_REDIS_URL: durable.url,
      CLIENT_ID: name,
    });
    const sessionId = await waitFor(`${name} serving`, () => /session ([0-9a-f]{32})/.exec(proc.output())?.[1]);
    workers.set(name, { ...proc, sessionId });
  }
  const keys = new Keys("pinboard:", 16);
  const owner = async (id: string) => {
    const row = await client.hget(keys.placements(await keys.bucketOf(id), SINGLE_ENV, "/counter"), id);
    const session = row?.split("\n")[0];
    return [...workers].find(([, w]) => w.sessionId === session)?.[0];
  };
  const close = async () => {
    for (const p of [...workers.values(), pinboard]) p.child.kill("SIGKILL");
    await Promise.all([...workers.values(), pinboard].map((p) => p.exited));
    client.disconnect();
  };
  return { url, workers, owner, close };
}

interface Answer {
  sent: number;
  done: number;
  status: number;
  body: string;
}

/** One loop per id: increment, pause 20–50 ms, again; every answer kept. */
function traffic(url: string) {
  const answers = new Map<string, Answer[]>(IDS.map((id) => [id, []]));
  let running = true;
  const loop = async (id: string, index: number) => {
    while (running) {
      const sent = Date.now();
      let status = 0;
      let body = "";
      try {
        const res = await fetch(`${url}/counter/${id}/increment`, {
          method: "POST",
          headers: { "x-forwarded-for": `10.${index >> 8}.${index & 255}.1` },
          signal: AbortSignal.timeout(30_000),
        });
        status = res.status;
        body = await res.text();
      } catch (err) {
        body = (err as Error).name;
      }
      answers.get(id)!.push({ sent, done: Date.now(), status, body: body.slice(0, 80) });
      await sleep(20 + Math.random() * 30);
    }
  };
  const loops = IDS.map(loop);
  return {
    answers,
    okAfter: (id: string, t: number) => answers.get(id)!.some((a) => a.status === 200 && a.sent >= t),
    stop: async () => {
      running = false;
      await Promise.all(loops);
    },
  };
}

/** The longest time between two consecutive 2xx answers of `list` ending in [from, to). */
function longestGap(list: Answer[], from: number, to = Number.POSITIVE_INFINITY): number {
  let last: number | undefined;
  let longest = 0;
  for (const a of list) {
    if (a.status < 200 || a.status > 299) continue;
    if (last !== undefined && a.done >= from && a.done < to) longest = Math.max(longest, a.done - last);
    last = a.done;
  }
  return longest;
}

const percentile = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!;

async function run(mode: "sigterm" | "kill", redis: EmbeddedRedis, durable: EmbeddedRedis) {
  const flush = new Redis(redis.url);
  await flush.flushall();
  flush.disconnect();
  const fleet = await startFleet(redis, durable);
  const load = traffic(fleet.url);
  try {
    await waitFor("every id answered", () => (IDS.every((id) => load.okAfter(id, 0)) ? true : undefined), 60_000);
    await sleep(BASELINE_MS);
    const owners = new Map(await Promise.all(IDS.map(async (id) => [id, await fleet.owner(id)] as const)));
    const count = (name: string) => IDS.filter((id) => owners.get(id) === name).length;
    const victim = count("worker-a") >= count("worker-b") ? "worker-a" : "worker-b";
    const moved = IDS.filter((id) => owners.get(id) === victim);
    const stoppedAt = Date.now();
    fleet.workers.get(victim)!.child.kill(mode === "sigterm" ? "SIGTERM" : "SIGKILL");
    await waitFor(
      "every id answered again",
      () => (moved.every((id) => load.okAfter(id, stoppedAt)) ? true : undefined),
      LEASE_MS * 3,
    );
    await sleep(500);
    await load.stop();
    const gaps = moved.map((id) => longestGap(load.answers.get(id)!, stoppedAt)).sort((a, b) => a - b);
    // The same measure over the seconds before the stop: what the machine's load alone gives.
    const before = moved
      .map((id) => longestGap(load.answers.get(id)!, stoppedAt - BASELINE_MS, stoppedAt))
      .sort((a, b) => a - b);
    const failures = new Map<string, number>();
    for (const id of IDS)
      for (const a of load.answers.get(id)!)
        if (a.done >= stoppedAt && (a.status < 200 || a.status > 299))
          failures.set(`${a.status} ${a.body}`, (failures.get(`${a.status} ${a.body}`) ?? 0) + 1);
    const exit = mode === "sigterm" ? await fleet.workers.get(victim)!.exited : "killed";
    return {
      ids: moved.length,
      p50: percentile(gaps, 0.5),
      p99: percentile(gaps, 0.99),
      max: gaps.at(-1)!,
      beforeP50: percentile(before, 0.5),
      beforeMax: before.at(-1)!,
      failures,
      exit,
    };
  } finally {
    await load.stop();
    await fleet.close();
  }
}

async function main() {
  const modes = flags.mode === "both" ? (["sigterm", "kill"] as const) : [flags.mode as "sigterm" | "kill"];
  const redis = await startEmbeddedRedis();
  const durable = await startEmbeddedRedis();
  console.log(`ids ${IDS.length}, each hit every 20–50 ms; lease ${LEASE_MS} ms; two example workers, durable state`);
  try {
    for (const mode of modes) {
      for (let i = 1; i <= Number(flags.runs); i++) {
        const r = await run(mode, redis, durable);
        const failed = [...r.failures].map(([k, n]) => `${n}× ${k}`).join("; ") || "none";
        console.log(
          `${mode === "sigterm" ? "SIGTERM" : "kill -9"} run ${i}: ${r.ids} ids moved; longest gap per id ` +
            `p50 ${r.p50} ms, p99 ${r.p99} ms, max ${r.max} ms (in the ${BASELINE_MS / 1000} s before: p50 ` +
            `${r.beforeP50} ms, max ${r.beforeMax} ms); non-2xx: ${failed}; exit ${r.exit}`,
        );
      }
    }
  } finally {
    await redis.stop();
    await durable.stop();
  }
  process.exit(0);
}

await main();
