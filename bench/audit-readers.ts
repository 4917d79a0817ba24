/**
 * audit-readers: what operators reading the audit trail cost the fleet. A real Node entry
 * (bench/pinboard-main.ts → startNode) on an embedded Redis, a fleet of bench workers on /hot
 * (heartbeating on their own), the trail filled to its cap (PINBOARD_AUDIT_MAX_ENTRIES, 10,000)
 * with entries as large as a real one gets and none of them visible to the readers. Then, in
 * one run, windows of paced forwards (wrk, /hot ids placed beforehand) with a heartbeat probe
 * beside them (a worker of the bench's own heartbeating every 100 ms), first with no reader,
 * then with `--readers` narrow operators polling GET /registry/audit as the console does (the
 * newest page every 4 s), then with as many in a loop (following the cursor to the end of the
 * trail, then from the top again, one request right after another). Prints per window: forward p50,
 * p99 and max, failures; heartbeats ok, p99 and max; audit reads done; the read-audit script
 * calls with their p99 and longest time inside Redis (SLOWLOG logging every command); Redis
 * commands over 1 ms, and the longest command that is not read-audit.
 *
 *   npx tsx bench/audit-readers.ts [--readers 8] [--duration 20] [--rounds 2] [--rate 300]
 *
 * A measurement, not a test: the machine is shared, so compare the rows of one run.
 */
import { parseArgs } from "node:util";
import { Redis } from "ioredis";
import { recordAudit } from "../src/audit/trail.ts";
import { mintCredential } from "../src/auth/mint.ts";
import { AUDIT_SCAN_PER_CALL } from "../src/operator/audit-read.ts";
import { readAudit } from "../src/operator/lua/read-audit.ts";
import { readAuditScript } from "../src/operator/lua/scripts.generated.ts";
import { Keys } from "../src/redis/keys.ts";
import { startEmbeddedRedis } from "../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { TcpRedis } from "../src/runtime/node/redis/tcp.ts";
import { startChallengeServer } from "../test/support/challenge-server.ts";
import { largestRegistration } from "../test/support/largest-audit-entry.ts";
import { heartbeatBody, registerBody } from "../test/support/registration.ts";
import { type Child, installReaper, killWhenBenchDies, spawnNode } from "./children.ts";
import { cycle } from "./paths.ts";
import { placeThroughPinboard, startColdStartWindows } from "./placements.ts";
import { percentile, textTable } from "./report.ts";
import { PREFIX, pinboardSettings, SHARDS } from "./topology.ts";
import { runWrk } from "./wrk.ts";

const { values } = parseArgs({
  options: {
    readers: { type: "string", default: "8" },
    duration: { type: "string", default: "20" },
    rounds: { type: "string", default: "2" },
    rate: { type: "string", default: "300" },
    entries: { type: "string", default: "10000" },
  },
});
const READERS = Number(values.readers);
const DURATION_S = Number(values.duration);
const ROUNDS = Number(values.rounds);
const RATE = Number(values.rate);
const ENTRIES = Number(values.entries);
const LEASE_MS = 15_000;
const HOT_IDS = 200;
const log = (msg: string) => process.stderr.write(`[audit-readers] ${msg}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type ReaderMode = "loop" | "console";
const CONSOLE_POLL_MS = 4000;

interface Row {
  readers: string;
  forwards: number;
  p50: number;
  p99: number;
  max: number;
  non2xx: number;
  heartbeats: number;
  heartbeatFailures: number;
  heartbeatP99: number;
  heartbeatMax: number;
  reads: number;
  /** read-audit script calls, their p99 and longest (µs in Redis, SLOWLOG). */
  auditCalls: number;
  auditP50Us: number;
  auditP99Us: number;
  auditMaxUs: number;
  /** Every Redis command over 1 ms, and the longest of those that are not read-audit. */
  slowCalls: number;
  otherMaxUs: number;
}

/** The slow log (every command) split into read-audit's calls and the rest. */
function callTimes(logged: Array<[number, number, number, string[]]>) {
  const audit: number[] = [];
  let slowCalls = 0;
  let otherMaxUs = 0;
  for (const [, , us, args] of logged) {
    const micros = Number(us);
    if (micros > 1000) slowCalls++;
    if (String(args[0]).toLowerCase().startsWith("eval") && String(args[1]) === readAuditScript.sha) audit.push(micros);
    else if (!["slowlog", "config"].includes(String(args[0]).toLowerCase())) otherMaxUs = Math.max(otherMaxUs, micros);
  }
  const sorted = Float64Array.from(audit).sort();
  return {
    auditCalls: audit.length,
    auditP50Us: percentile(sorted, 0.5) ?? 0,
    auditP99Us: percentile(sorted, 0.99) ?? 0,
    auditMaxUs: sorted.at(-1) ?? 0,
    slowCalls,
    otherMaxUs,
  };
}

async function main(): Promise<void> {
  const redis = await startEmbeddedRedis();
  killWhenBenchDies(redis.process.pid!);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  const children: Child[] = [];
  const worker = await startChallengeServer();
  const stop = async () => {
    await Promise.all(children.map((c) => c.stop()));
    await worker.close();
    admin.disconnect();
    await redis.stop();
  };
  installReaper(stop);
  try {
    const secret = "bench-secret-".padEnd(48, "x");
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const settings = { ...pinboardSettings(secret), PINBOARD_LEASE_TTL_MS: String(LEASE_MS) };
    const pinboard = spawnNode("pinboard", "bench/pinboard-main.ts", {
      PORT: String(port),
      HOST: "127.0.0.1",
      REDIS_URL: redis.url,
      ...settings,
    });
    children.push(pinboard);
    await pinboard.next((m) => m.bench === "ready", 60_000);
    const workerToken = await mintCredential({
      secret,
      sub: "bench",
      scopes: ["pinboard:worker"],
      pinboard: { namespaces: ["*"], allowedBackendHosts: ["127.0.0.1"] },
      ttlSeconds: 3600,
    });
    const fleet = spawnNode("fleet", "bench/fleet-main.ts", {
      PINBOARD_URL: url,
      BENCH_CREDENTIAL: workerToken,
      BENCH_WORKERS: "4",
      BENCH_NAMESPACES: "/hot",
      BENCH_CLIENT_PREFIX: "audit-bench",
    });
    children.push(fleet);
    await fleet.next((m) => m.bench === "ready", 120_000);
    const keys = new Keys(PREFIX, SHARDS);
    const quarantineEnds = await startColdStartWindows(url, "/hot", SHARDS, admin, keys, LEASE_MS);

    log(`filling the trail with ${ENTRIES} entries none of the readers may see`);
    const entryBytes = await fillTrail(redis.url, keys, ENTRIES);
    log(`trail: ${await admin.xlen(keys.audit)} entries of ${entryBytes} bytes each`);

    await sleep(Math.max(0, quarantineEnds - Date.now() + 250));
    await placeThroughPinboard(
      url,
      "/hot",
      Array.from({ length: HOT_IDS }, (_, i) => `h-${i}`),
    );

    const reader = await mintCredential({
      secret,
      sub: "narrow-operator",
      scopes: ["pinboard:operator"],
      pinboard: { namespaces: ["/mine"] },
      ttlSeconds: 3600,
    });
    const isolated = await isolatedCalls(redis.url, keys);
    const probe = await startHeartbeatProbe(url, workerToken, worker);
    // Every command in the slow log, to read each script call's own time in Redis.
    await admin.config("SET", "slowlog-max-len", "1000000");
    await admin.config("SET", "slowlog-log-slower-than", "0");
    log("warming up: 3 s of forwards");
    await forwardWindow(url, 3);

    const rows: Row[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [readers, mode] of [
        [0, "loop"],
        [READERS, "console"],
        [READERS, "loop"],
      ] as const) {
        log(`round ${round + 1}: ${readers} readers (${mode}), ${DURATION_S} s at ${RATE} forwards/s`);
        rows.push(await window(url, admin, probe, reader, readers, mode));
      }
    }
    probe.stop();
    printRows(rows, entryBytes);
    console.log(
      `read-audit alone (${ISOLATED_CALLS} calls one after another, ${AUDIT_SCAN_PER_CALL} entries looked at each, ` +
        `Redis time from SLOWLOG): a narrow claim (nothing sent) p50 ${isolated.narrow.p50} ms, ` +
        `p99 ${isolated.narrow.p99} ms; "*" (all sent) p50 ${isolated.broad.p50} ms, p99 ${isolated.broad.p99} ms`,
    );
  } finally {
    await stop();
  }
}

/**
 * Appends one entry as large as a real one gets through the trail's own script (every field a
 * worker chooses at its cut), then copies of it: `count` in all, none visible to /mine.
 */
async function fillTrail(redisUrl: string, keys: Keys, count: number): Promise<number> {
  const port = new TcpRedis({ url: redisUrl });
  const names = Array.from({ length: 256 }, (_, i) => `/other-${i}`.padEnd(129, "x"));
  const silent = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };
  await recordAudit(
    { redis: port, keys, log: silent, config: { auditMaxEntries: count } as never },
    largestRegistration(names),
  );
  await port.close();
  const admin = new Redis(redisUrl);
  const [[, fields]] = (await admin.xrevrange(keys.audit, "+", "-", "COUNT", 1)) as [[string, string[]]];
  const existing = await admin.xlen(keys.audit);
  for (let i = existing; i < count; i += 500) {
    const pipeline = admin.pipeline();
    for (let j = i; j < Math.min(count, i + 500); j++) pipeline.xadd(keys.audit, "*", ...fields);
    await pipeline.exec();
  }
  admin.disconnect();
  return fields.reduce((sum, s) => sum + Buffer.byteLength(s), 0);
}

const ISOLATED_CALLS = 400;

/**
 * The read-audit script on its own, called one after another over the full trail, with
 * AUDIT_SCAN_PER_CALL entries per call as GET /registry/audit calls it: its time inside Redis,
 * for a narrow claim and for "*". Medians resist the machine's noise better than a window's tail.
 */
async function isolatedCalls(redisUrl: string, keys: Keys) {
  const port = new TcpRedis({ url: redisUrl });
  const admin = new Redis(redisUrl);
  await admin.config("SET", "slowlog-max-len", "1000000");
  await admin.config("SET", "slowlog-log-slower-than", "0");
  const measure = async (names: string) => {
    await admin.slowlog("RESET");
    let before = "";
    for (let i = 0; i < ISOLATED_CALLS; i++) {
      const batch = await readAudit(port, keys, { before, count: AUDIT_SCAN_PER_CALL, kind: "", type: "", names });
      before = batch.next;
    }
    const logged = (await admin.slowlog("GET", 1_000_000)) as Array<[number, number, number, string[]]>;
    const times = logged.filter(([, , , args]) => String(args[1]) === readAuditScript.sha).map(([, , us]) => us);
    const sorted = Float64Array.from(times).sort();
    const ms = (q: number) => ((percentile(sorted, q) ?? 0) / 1000).toFixed(3);
    return { p50: ms(0.5), p99: ms(0.99) };
  };
  const narrow = await measure("/mine");
  const broad = await measure("");
  await port.close();
  admin.disconnect();
  return { narrow, broad };
}

interface Probe {
  take(): { sent: number; failed: number; p99: number; max: number };
  stop(): void;
}

/** A worker of the bench's own that heartbeats every 100 ms: each heartbeat's status and time. */
async function startHeartbeatProbe(
  url: string,
  token: string,
  worker: Awaited<ReturnType<typeof startChallengeServer>>,
): Promise<Probe> {
  const call = (path: string, body: unknown) =>
    fetch(`${url}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
  const res = await call("/registry/register", registerBody(worker, { namespaces: ["/probe"], clientId: "probe" }));
  const { sessionId } = (await res.json()) as { sessionId: string };
  let times: number[] = [];
  let failed = 0;
  let running = true;
  void (async () => {
    while (running) {
      const started = performance.now();
      const answer = await call("/registry/heartbeat", heartbeatBody(worker, sessionId)).catch(() => null);
      await answer?.arrayBuffer();
      times.push(performance.now() - started);
      if (answer?.status !== 200) failed++;
      await sleep(100);
    }
  })();
  return {
    take() {
      const sorted = Float64Array.from(times).sort();
      const out = { sent: times.length, failed, p99: percentile(sorted, 0.99) ?? 0, max: sorted.at(-1) ?? 0 };
      times = [];
      failed = 0;
      return out;
    },
    stop: () => void (running = false),
  };
}

/**
 * A narrow operator reading the trail: "loop" follows each cursor to the end, then again from
 * the top, one request right after another; "console" reads the newest page every 4 s, as the
 * console's Activity view refreshes (its first read at a random point of the first 4 s).
 */
async function readLoop(
  url: string,
  token: string,
  mode: ReaderMode,
  until: () => boolean,
  count: { reads: number },
): Promise<void> {
  let cursor: string | undefined;
  if (mode === "console") await sleep(Math.random() * CONSOLE_POLL_MS);
  while (!until()) {
    if (mode === "console") {
      await readPage(url, token, undefined);
      count.reads++;
      await sleep(CONSOLE_POLL_MS);
      continue;
    }
    cursor = await readPage(url, token, cursor);
    count.reads++;
  }
}

/** One GET /registry/audit: its cursor. */
async function readPage(url: string, token: string, before: string | undefined): Promise<string | undefined> {
  const query = before ? `?before=${before}` : "";
  const res = await fetch(`${url}/registry/audit${query}`, { headers: { authorization: `Bearer ${token}` } });
  const body = (await res.json()) as { cursor?: string };
  if (res.status !== 200) throw new Error(`GET /registry/audit answered ${res.status}: ${JSON.stringify(body)}`);
  return body.cursor;
}

function forwardWindow(url: string, durationS: number) {
  return runWrk({
    url,
    plan: cycle("/hot/h-", HOT_IDS, "length"),
    headers: {},
    connections: 16,
    durationS,
    rate: RATE,
  });
}

async function window(
  url: string,
  admin: Redis,
  probe: Probe,
  reader: string,
  readers: number,
  mode: ReaderMode,
): Promise<Row> {
  let done = false;
  const count = { reads: 0 };
  const loops = Array.from({ length: readers }, () => readLoop(url, reader, mode, () => done, count));
  await sleep(readers > 0 ? 1000 : 0);
  probe.take();
  await admin.slowlog("RESET");
  const wrk = await forwardWindow(url, DURATION_S);
  const beat = probe.take();
  const logged = (await admin.slowlog("GET", 1_000_000)) as Array<[number, number, number, string[]]>;
  done = true;
  await Promise.all(loops);
  return {
    readers: readers === 0 ? "0" : `${readers} ${mode}`,
    forwards: wrk.requests,
    p50: wrk.p50Ms,
    p99: wrk.p99Ms,
    max: wrk.maxMs,
    non2xx: wrk.non2xx + wrk.errors,
    heartbeats: beat.sent,
    heartbeatFailures: beat.failed,
    heartbeatP99: beat.p99,
    heartbeatMax: beat.max,
    reads: count.reads,
    ...callTimes(logged),
  };
}

function printRows(rows: Row[], entryBytes: number): void {
  const f = (n: number) => n.toFixed(1);
  const body = rows.map((r) => [
    r.readers,
    String(r.forwards),
    f(r.p50),
    f(r.p99),
    f(r.max),
    String(r.non2xx),
    `${r.heartbeats - r.heartbeatFailures}/${r.heartbeats}`,
    f(r.heartbeatP99),
    f(r.heartbeatMax),
    String(r.reads),
    String(r.auditCalls),
    (r.auditP50Us / 1000).toFixed(2),
    (r.auditP99Us / 1000).toFixed(2),
    (r.auditMaxUs / 1000).toFixed(2),
    String(r.slowCalls),
    (r.otherMaxUs / 1000).toFixed(2),
  ]);
  const head = ["readers", "forwards", "p50 ms", "p99 ms", "max ms", "failed", "heartbeats ok", "hb p99 ms"];
  head.push(
    "hb max ms",
    "audit reads",
    "script calls",
    "call p50 ms",
    "call p99 ms",
    "call max ms",
    "cmds >1 ms",
    "other max ms",
  );
  console.log(`trail: ${ENTRIES} entries of ${entryBytes} bytes; forwards paced at ${RATE}/s for ${DURATION_S} s`);
  console.log(textTable(head, body));
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
