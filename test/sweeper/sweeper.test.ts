import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signAttestation } from "../../src/contract/attestation.ts";
import { Keys } from "../../src/redis/keys.ts";
import { runSweep } from "../../src/sweeper/sweep.ts";
import { durableEnv } from "../support/durability.ts";
import { startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { getRow } from "../support/rows.ts";
import { spawnWorkerProcess, type WorkerProcess } from "../support/spawn-worker.ts";

const LEASE = 2000;
let t: TestRedis;
let durable: TestRedis;
let pb: PinboardProcess;
let sweepers: TestPinboard[];
const workers: WorkerProcess[] = [];
const clientIds = new Map<WorkerProcess, string>();
const alive = () => workers.filter((w) => w.process.exitCode === null && w.process.signalCode === null);

const env = () => ({
  PINBOARD_LEASE_TTL_MS: String(LEASE),
  PINBOARD_WAKE_TIMEOUT_MS: "2000",
  PINBOARD_SWEEP_INTERVAL_MS: "3600000",
  PINBOARD_DURABLE_REDIS_URL: durable.url,
});

beforeAll(async () => {
  t = await startTestRedis();
  // PINBOARD_DURABLE_REDIS_URL names one server: the durable store stays on one redis-server.
  durable = await startTestRedis({ single: true });
  pb = await startPinboardProcess({ redis: t, env: env() });
  // Two in-process sweepers on the same Redis, as two Pinboard nodes would run them.
  sweepers = [await startTestPinboard(t, env()), await startTestPinboard(t, env())];
});
afterAll(async () => {
  await Promise.all(workers.map((w) => w.kill()));
  await Promise.all(sweepers.map((s) => s.close()));
  await pb.stop();
  await durable.stop();
  await t.stop();
});

async function addWorker(clientId: string): Promise<WorkerProcess> {
  const w = await spawnWorkerProcess("durable-worker-main.ts", {
    PINBOARD_URL: pb.url,
    CREDENTIAL: await pb.workerCredential(),
    CLIENT_ID: clientId,
    ...durableEnv(durable),
  });
  workers.push(w);
  clientIds.set(w, clientId);
  return w;
}

const skipColdStart = async () => {
  for (let b = 0; b < 16; b++) await t.redis.client.set(`pinboard:{${b}}:boot_time`, "0");
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const call = (path: string, method = "GET") =>
  fetch(`${pb.url}${path}`, { method }).then(async (r) => ({ status: r.status, body: (await r.json()) as unknown }));
const storedCount = async (id: string, field = "count") => {
  const raw = await durable.redis.hget(`pinned:{/counter/${id}}:data`, field);
  return raw === null ? null : JSON.parse(raw);
};

/** Runs sweep passes (both sweepers racing) until `done` holds or the time is up. */
async function sweepUntil(done: () => Promise<boolean>, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let passes = 0;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`sweeps did not converge after ${passes} passes`);
    const reports = await Promise.all(sweepers.map((s) => runSweep(s.deps)));
    passes += reports.filter((r) => r.ran).length;
    await sleep(250);
  }
  return passes;
}

describe("the sweeper", () => {
  it("wakes an instance at a live worker after its owner is killed", async () => {
    const a = await addWorker("sweep-a");
    const b = await addWorker("sweep-b");
    await skipColdStart();
    for (let i = 0; i < 3; i++) expect((await call("/counter/c1/increment", "POST")).status).toBe(200);
    const before = await getRow(t, "/counter", "c1");
    const owner = [a, b].find((w) => w.sessionId === before!.sessionId)!;
    const survivor = owner === a ? b : a;

    await owner.kill();
    await sleep(LEASE + 300);
    await sweepUntil(async () => {
      const row = await getRow(t, "/counter", "c1");
      const marker = await t.redis.hget(`pinboard:{${await bucketOf("c1")}}:overwritten`, "*\n/counter\nc1");
      return row?.sessionId === survivor.sessionId && marker === null;
    });
    const after = await getRow(t, "/counter", "c1");
    expect(BigInt(after!.epoch!)).toBeGreaterThan(BigInt(before!.epoch!));
    // Woken, not merely placed: the survivor holds the instance before any client asks.
    const stats = await fetch(`${survivor.url}/_pinned/stats`, {
      headers: { "Pinboard-Attestation": await attest(survivor) },
    });
    expect(JSON.stringify(await stats.json())).toContain("c1");
    const served = await call("/counter/c1");
    expect(served.body).toMatchObject({ count: 3, epoch: after!.epoch });
  });

  it("after Redis is flushed, resurrects durable instances and fires a due alarm exactly once with two sweepers racing", async () => {
    if (alive().length < 2) await addWorker("sweep-c");
    await skipColdStart();
    expect((await call("/counter/c2/increment", "POST")).status).toBe(200);
    expect((await call("/counter/c2/alarm?in=1500", "POST")).status).toBe(200);
    // Kill the owner before the alarm is due, so that only a sweeper can fire it.
    const c2Owner = (await getRow(t, "/counter", "c2"))!.sessionId;
    await workers.find((w) => w.sessionId === c2Owner)?.kill();
    const survivor = alive()[0]!;

    await t.flush(); // Redis lost everything: placements, records, the fleet license.
    await sleep(1600);
    expect(await storedCount("c2", "alarms")).toBeNull();

    await sweepUntil(async () => (await storedCount("c2", "alarms")) !== null, 30_000);
    await sweepUntil(async () => ((await getRow(t, "/counter", "c1"))?.epoch ?? "") !== "", 30_000);
    for (let i = 0; i < 3; i++) await Promise.all(sweepers.map((s) => runSweep(s.deps)));
    expect(await storedCount("c2", "alarms")).toBe(1);
    expect(await storedCount("c2")).toBe(1);

    // c1 came back at the survivor's new session, with its durable count intact.
    const row = await getRow(t, "/counter", "c1");
    const record = JSON.parse((await t.redis.hget("pinboard:{global}:sessions", row!.sessionId))!);
    expect(record.clientId).toBe(clientIds.get(survivor));
    expect((await call("/counter/c1")).body).toMatchObject({ count: 3, epoch: row!.epoch });
    // Two sweepUntil of up to 30 s each, on a machine the whole suite shares.
  }, 90_000);
});

const bucketOf = (id: string) => new Keys("pinboard:", 16).bucketOf(id);
async function attest(w: WorkerProcess): Promise<string> {
  const sealed = JSON.parse((await t.redis.hget("pinboard:{global}:sessions", w.sessionId))!).secret as string;
  const secret = await sweepers[0]!.deps.secrets.open(w.sessionId, sealed);
  return signAttestation(secret, { aud: w.sessionId, htm: "GET", htu: "/_pinned/stats" }, Date.now() / 1000);
}
