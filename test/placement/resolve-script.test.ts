import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { affinityHash } from "../../src/placement/affinity.ts";
import { Refusal } from "../../src/placement/refusal.ts";
import { type Resolution, type ResolveRequest, resolvePlacement } from "../../src/placement/resolver.ts";
import { SINGLE_ENV } from "../../src/redis/keys.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * The resolve script, step by step, through `resolvePlacement` with an in-process Pinboard's
 * deps on a private Redis. Workers register through the registry (challenge servers prove their
 * URLs); nothing here forwards. Each test uses its own namespace so that namespace lists and
 * their headroom never leak between tests.
 */

let t: TestRedis;
let pb: TestPinboard;
let token: string;
const servers: ChallengeServer[] = [];
const LEASE = 15_000;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startTestPinboard(t);
  token = await credential("pinboard:worker");
  // Not a cold-start test: every bucket has been up for long (the cold-start test resets its own).
  for (const b of pb.deps.keys.allBuckets()) await t.redis.client.set(pb.deps.keys.bootTime(b), "0");
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await pb?.close();
  await t?.stop();
});

async function registerWorker(
  target: TestPinboard,
  namespaces: string[],
  overrides: Record<string, unknown> = {},
): Promise<{ sid: string; server: ChallengeServer }> {
  const server = await startChallengeServer(`secret-${servers.length}-0123456789abcdef`);
  servers.push(server);
  const { sessionId } = await registerOk(target, token, registerBody(server, { namespaces, ...overrides }));
  return { sid: sessionId, server };
}
const worker = async (namespaces: string[], overrides: Record<string, unknown> = {}) =>
  (await registerWorker(pb, namespaces, overrides)).sid;

async function heartbeat(
  server: ChallengeServer,
  sid: string,
  overrides: Record<string, unknown> = {},
): Promise<Record<string, unknown>> {
  const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(server, sid, overrides) });
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, unknown>;
}

const resolve = (
  ns: string,
  id: string,
  extra: Partial<ResolveRequest> = {},
  target: TestPinboard = pb,
): Promise<Resolution> =>
  resolvePlacement(target.deps, { ns, id, env: SINGLE_ENV, hostname: "", takeover: "", ...extra });

async function refusal(p: Promise<unknown>): Promise<Refusal> {
  try {
    await p;
  } catch (err) {
    if (err instanceof Refusal) return err;
    throw err;
  }
  throw new Error("expected a refusal, got a forward");
}

const bucketOf = (id: string) => pb.deps.keys.bucketOf(id);
async function idsInBucket(bucket: number, n: number, prefix: string): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; out.length < n; i++) if ((await bucketOf(`${prefix}-${i}`)) === bucket) out.push(`${prefix}-${i}`);
  return out;
}
const redisNow = () => t.redis.timeMs();
const listEntry = (ns: string, bucket: number, sid: string) =>
  t.redis.hget(pb.deps.keys.nsWorkers(bucket, "", ns), sid);
async function setListExpiry(
  target: TestPinboard,
  ns: string,
  bucket: number,
  sid: string,
  expiry: number,
): Promise<void> {
  const key = target.deps.keys.nsWorkers(bucket, "", ns);
  const [, headroom] = (await t.redis.hget(key, sid))!.split("\n");
  await t.redis.client.hset(key, sid, `${expiry}\n${headroom}\n`);
  // Edited behind the scripts' back: drop the list's summary so the next resolve rebuilds its indexes.
  await t.redis.client.del(target.deps.keys.nsSummary(bucket, "", ns));
}

describe("step 1: an existing row", () => {
  it("forwards to a live owner and keeps the epoch, also while the owner drains", async () => {
    const a = await registerWorker(pb, ["/live"]);
    const first = await resolve("/live", "doc");
    expect(first).toMatchObject({ sessionId: a.sid, fresh: true, advertiseUrl: a.server.url, secret: a.server.secret });
    expect(first.epoch).toMatch(/^\d+$/);
    const again = await resolve("/live", "doc");
    expect(again).toMatchObject({ sessionId: a.sid, epoch: first.epoch, fresh: false, overwritten: "" });
    await heartbeat(a.server, a.sid, { draining: true });
    expect(await resolve("/live", "doc")).toMatchObject({ sessionId: a.sid, epoch: first.epoch, fresh: false });
    expect(await getRow(t, "/live", "doc")).toMatchObject({ sessionId: a.sid, epoch: first.epoch, expiry: "" });
  });

  it("re-places a dead owner's id (deregistered) with a strictly higher epoch and lists it as overwritten", async () => {
    const a = await registerWorker(pb, ["/dead"]);
    const first = await resolve("/dead", "doc");
    expect(first.sessionId).toBe(a.sid);
    const b = await worker(["/dead"]);
    const gone = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: a.sid } });
    expect(gone.status).toBe(200);

    const second = await resolve("/dead", "doc");
    expect(second).toMatchObject({ sessionId: b, fresh: true });
    expect(BigInt(second.epoch)).toBeGreaterThan(BigInt(first.epoch));
    expect(second.overwritten).toBe(second.epoch);
    const bucket = await bucketOf("doc");
    expect(await t.redis.hget(`pinboard:{${bucket}}:overwritten`, `${SINGLE_ENV}\n/dead\ndoc`)).toBe(second.epoch);
    expect(await getRow(t, "/dead", "doc")).toMatchObject({ sessionId: b, epoch: second.epoch });
    // The live owner now forwards, still reporting the marker until a 2xx clears it.
    expect(await resolve("/dead", "doc")).toMatchObject({
      sessionId: b,
      epoch: second.epoch,
      fresh: false,
      overwritten: second.epoch,
    });
  });

  it("treats an owner whose record expired (expiry ≤ now, not yet pruned) as dead", async () => {
    const a = await worker(["/expired"]);
    const b = await worker(["/expired"]);
    const [id] = await idsInBucket(3, 1, "exp");
    await putRow(t, "/expired", id!, { sessionId: a, epoch: "100" });
    expect(await resolve("/expired", id!)).toMatchObject({ sessionId: a, epoch: "100", fresh: false });

    const now = await redisNow();
    const mirror = pb.deps.keys.workers(3);
    const record = JSON.parse((await t.redis.hget(mirror, a))!) as Record<string, unknown>;
    await t.redis.client.hset(mirror, a, JSON.stringify({ ...record, expiry: now - 1 }));
    await setListExpiry(pb, "/expired", 3, a, now - 1);

    const next = await resolve("/expired", id!);
    expect(next).toMatchObject({ sessionId: b, fresh: true });
    expect(BigInt(next.epoch)).toBeGreaterThan(100n);
  });

  it("frees a row whose wind-down expiry has passed; an unexpired one keeps forwarding", async () => {
    const a = await worker(["/wind"]);
    const now = await redisNow();
    await putRow(t, "/wind", "held", { sessionId: a, epoch: "7", expiry: String(now + 60_000) });
    expect(await resolve("/wind", "held")).toMatchObject({ sessionId: a, epoch: "7", fresh: false });

    await putRow(t, "/wind", "past", { sessionId: a, epoch: "5", expiry: String(now - 1000) });
    const freed = await resolve("/wind", "past");
    expect(freed).toMatchObject({ sessionId: a, fresh: true, survivingWindDown: "" });
    expect(BigInt(freed.epoch)).toBeGreaterThan(5n);
    expect(await getRow(t, "/wind", "past")).toMatchObject({ sessionId: a, epoch: freed.epoch, expiry: "" });
  });

  it("keeps an unexpired wind-down on the row that replaces a dead owner", async () => {
    const a = await worker(["/wind2"]);
    const now = await redisNow();
    const fence = String(now + 60_000);
    await putRow(t, "/wind2", "doc", { sessionId: "00000000deadbeef", epoch: "9", expiry: fence });
    const next = await resolve("/wind2", "doc");
    expect(next).toMatchObject({ sessionId: a, fresh: true, survivingWindDown: fence });
    expect(await getRow(t, "/wind2", "doc")).toMatchObject({ sessionId: a, epoch: next.epoch, expiry: fence });
  });
});

describe("step 2: unknown namespace", () => {
  it("is 404 unknown namespace, before the cold-start clock starts", async () => {
    const [id] = await idsInBucket(5, 1, "nons");
    await t.redis.client.del(pb.deps.keys.bootTime(5));
    try {
      const err = await refusal(resolve("/nobody", id!));
      expect(err.status).toBe(404);
      expect(err.body).toEqual({ error: "unknown namespace" });
      expect(err.headers["Retry-After"]).toBeUndefined();
      expect(err.outcome).toBe("unknown-ns");
      expect(await t.redis.get(pb.deps.keys.bootTime(5))).toBeNull();
    } finally {
      await t.redis.client.set(pb.deps.keys.bootTime(5), "0");
    }
  });
});

describe("step 3: cold-start quarantine", () => {
  it("SET NX boot_time per bucket and refuses new placements for one lease with Retry-After = the remaining window", async () => {
    const a = await worker(["/cold"]);
    const bucket = 7;
    const [placed, fresh, later] = await idsInBucket(bucket, 3, "cold");
    const elsewhere = (await idsInBucket(8, 1, "cold"))[0]!;
    const placedRes = await resolve("/cold", placed!);
    const boot = pb.deps.keys.bootTime(bucket);
    await t.redis.client.del(boot);
    try {
      // An existing live placement still forwards (step 1 precedes the quarantine).
      expect(await resolve("/cold", placed!)).toMatchObject({ sessionId: a, epoch: placedRes.epoch });
      expect(await t.redis.get(boot)).toBeNull();

      const before = Date.now();
      const err = await refusal(resolve("/cold", fresh!));
      expect(err.status).toBe(503);
      expect(err.body).toEqual({ error: "registry cold start, retry" });
      expect(err.headers["Retry-After"]).toBe("15");
      const stamped = Number(await t.redis.get(boot));
      expect(stamped).toBeGreaterThanOrEqual(before - 50);
      expect(stamped).toBeLessThanOrEqual(Date.now() + 50);

      // NX: a second resolve does not restart the clock.
      await refusal(resolve("/cold", later!));
      expect(Number(await t.redis.get(boot))).toBe(stamped);
      // Other buckets are not quarantined.
      expect(await resolve("/cold", elsewhere)).toMatchObject({ sessionId: a, fresh: true });

      await t.redis.client.set(boot, String((await redisNow()) - (LEASE - 2900)));
      const late = await refusal(resolve("/cold", fresh!));
      expect(late.headers["Retry-After"]).toBe("3");

      await t.redis.client.set(boot, String((await redisNow()) - LEASE - 1));
      expect(await resolve("/cold", fresh!)).toMatchObject({ sessionId: a, fresh: true });
    } finally {
      await t.redis.client.set(boot, "0");
    }
  });
});

describe("step 4: candidates", () => {
  const noBackends = async (p: Promise<unknown>) => {
    const err = await refusal(p);
    expect(err.status).toBe(503);
    expect(err.body).toEqual({ error: "no live backends for namespace" });
    expect(err.headers["Retry-After"]).toBe("1");
    expect(err.outcome).toBe("no-backends");
  };

  it("skips a draining worker, and the refusal writes nothing (the list's summary exists from the first flagged entry)", async () => {
    await worker(["/only-draining"], { draining: true });
    const lists = async () => Object.entries(await t.snapshot()).filter(([key]) => key.endsWith(":/only-draining"));
    const before = await lists();
    expect(before.filter(([key]) => key.includes(":nss:")).map(([, summary]) => summary)).toEqual(
      pb.deps.keys.allBuckets().map(() => ({ n: "0", sum: "0" })),
    );
    await noBackends(resolve("/only-draining", "doc"));
    expect(await lists()).toEqual(before);
  });

  it("skips a degraded worker (its heartbeat probe failed)", async () => {
    const g = await registerWorker(pb, ["/only-degraded"]);
    expect(await resolve("/only-degraded", "before")).toMatchObject({ sessionId: g.sid });
    g.server.mode = "error500";
    expect(await heartbeat(g.server, g.sid)).toMatchObject({ degraded: true });
    g.server.mode = "answer";
    expect((await listEntry("/only-degraded", 0, g.sid))!.endsWith("\ng")).toBe(true);
    await noBackends(resolve("/only-degraded", "doc"));
    // Its existing placement keeps routing.
    expect(await resolve("/only-degraded", "before")).toMatchObject({ sessionId: g.sid, fresh: false });
  });

  it("skips the excluded session", async () => {
    const x = await worker(["/only-excluded"]);
    await noBackends(resolve("/only-excluded", "doc", { exclude: x }));
    expect(await resolve("/only-excluded", "doc")).toMatchObject({ sessionId: x });
  });

  it("skips a worker with less than min(5000, lease/3) ms of lease left (lease 15 s: 5000)", async () => {
    const l = await worker(["/only-short"]);
    const [id] = await idsInBucket(2, 1, "short");
    await setListExpiry(pb, "/only-short", 2, l, (await redisNow()) + 4700);
    await noBackends(resolve("/only-short", id!));
    await setListExpiry(pb, "/only-short", 2, l, (await redisNow()) + 6000);
    expect(await resolve("/only-short", id!)).toMatchObject({ sessionId: l });
  });

  for (const { lease, bound, below, above } of [
    { lease: 30_000, bound: 5000, below: 4700, above: 7000 }, // lease/3 = 10000 would refuse at 7000
    { lease: 6000, bound: 2000, below: 1800, above: 3500 }, // 5000 would refuse at 3500
  ]) {
    it(`… that is min(5000, lease/3): ${bound} ms at a ${lease / 1000} s lease`, async () => {
      const other = await startTestPinboard(t, { PINBOARD_PREFIX: `p${lease}:`, PINBOARD_LEASE_TTL_MS: String(lease) });
      try {
        for (const b of other.deps.keys.allBuckets()) await t.redis.client.set(other.deps.keys.bootTime(b), "0");
        const { sid } = await registerWorker(other, ["/bound"]);
        const id = "bound-doc";
        const bucket = await other.deps.keys.bucketOf(id);
        await setListExpiry(other, "/bound", bucket, sid, (await redisNow()) + below);
        const err = await refusal(resolve("/bound", id, {}, other));
        expect(err.body).toEqual({ error: "no live backends for namespace" });
        await setListExpiry(other, "/bound", bucket, sid, (await redisNow()) + above);
        expect(await resolve("/bound", id, {}, other)).toMatchObject({ sessionId: sid });
      } finally {
        await other.close();
      }
    });
  }

  it("chooses the one eligible worker among draining, degraded, excluded and short-lease ones", async () => {
    const ok = await worker(["/mixed"]);
    await worker(["/mixed"], { draining: true });
    const g = await registerWorker(pb, ["/mixed"]);
    g.server.mode = "error500";
    await heartbeat(g.server, g.sid);
    g.server.mode = "answer";
    const x = await worker(["/mixed"]);
    const l = await worker(["/mixed"]);
    const now = await redisNow();
    for (const b of pb.deps.keys.allBuckets()) await setListExpiry(pb, "/mixed", b, l, now + 4000);
    for (let i = 0; i < 40; i++) expect((await resolve("/mixed", `m-${i}`, { exclude: x })).sessionId).toBe(ok);
  });

  it("uses an outlier-ejected worker only when no other candidate remains", async () => {
    const a = await worker(["/eject"]);
    const b = await worker(["/eject"]);
    const bucket = 4;
    const ejected = `pinboard:{${bucket}}:ejected`;
    await t.redis.client.hset(ejected, a, String((await redisNow()) + 30_000));
    const ids = await idsInBucket(bucket, 30, "ej");
    for (const id of ids.slice(0, 20)) expect((await resolve("/eject", id)).sessionId).toBe(b);
    // The last resort: the other worker is excluded.
    expect((await resolve("/eject", ids[20]!, { exclude: b })).sessionId).toBe(a);
    // An ejection that ran out no longer counts.
    await t.redis.client.hset(ejected, a, String((await redisNow()) - 1));
    const owners = new Set<string>();
    for (const id of ids.slice(21)) owners.add((await resolve("/eject", id)).sessionId);
    expect(owners.has(a)).toBe(true);
  });
});

describe("step 7: the write", () => {
  it("decrements the chosen worker's headroom on the chosen namespace list of the id's bucket only", async () => {
    const a = await worker(["/headroom", "/headroom-other"], { headroom: 100 });
    const id = "hr-doc";
    const bucket = await bucketOf(id);
    const other = (bucket + 1) % 16;
    const headroomOf = async (ns: string, b: number) => Number((await listEntry(ns, b, a))!.split("\n")[1]);
    expect(await headroomOf("/headroom", bucket)).toBe(100);
    await resolve("/headroom", id);
    expect(await headroomOf("/headroom", bucket)).toBe(99);
    expect(await headroomOf("/headroom", other)).toBe(100);
    expect(await headroomOf("/headroom-other", bucket)).toBe(100);
    // Forwarding to an existing placement does not spend headroom.
    await resolve("/headroom", id);
    expect(await headroomOf("/headroom", bucket)).toBe(99);
  });

  it("mints strictly increasing epochs per bucket over many placements", async () => {
    await worker(["/epochs"]);
    await worker(["/epochs"]);
    const last = new Map<number, bigint>();
    for (let i = 0; i < 200; i++) {
      const id = `ep-${i}`;
      const r = await resolve("/epochs", id);
      const epoch = BigInt(r.epoch);
      const prev = last.get(r.bucket);
      if (prev !== undefined) expect(epoch).toBeGreaterThan(prev);
      last.set(r.bucket, epoch);
    }
    expect(last.size).toBe(16);
    for (const [bucket, epoch] of last) expect(await t.redis.get(`pinboard:{${bucket}}:epoch`)).toBe(String(epoch));
  });

  it("mints max(now-based, previous + 1, old row's epoch + 1)", async () => {
    await worker(["/floor"]);
    const bucket = 9;
    const [a, b, c] = await idsInBucket(bucket, 3, "fl");
    const nowUs = BigInt(await redisNow()) * 1000n;
    const now = await resolve("/floor", a!);
    expect(BigInt(now.epoch)).toBeGreaterThanOrEqual(nowUs);
    expect(BigInt(now.epoch)).toBeLessThan(nowUs + 5_000_000n);

    const previous = nowUs * 2n;
    await t.redis.client.set(`pinboard:{${bucket}}:epoch`, previous.toString());
    expect((await resolve("/floor", b!)).epoch).toBe((previous + 1n).toString());

    const floor = nowUs * 3n;
    await putRow(t, "/floor", c!, { sessionId: "00000000deadbeef", epoch: floor.toString() });
    expect((await resolve("/floor", c!)).epoch).toBe((floor + 1n).toString());
  });
});

describe("steps 5 and 6: affinity and power of two", () => {
  it("the same affinity key picks the same worker across many ids while balanced; different keys spread", async () => {
    for (let i = 0; i < 4; i++) await worker(["/aff"], { headroom: 1000 });
    const byKey = new Map<number, Set<string>>();
    for (let k = 0; k < 12; k++) {
      const hash = await affinityHash(`client-${k}`);
      const owners = new Set<string>();
      for (let i = 0; i < 10; i++) owners.add((await resolve("/aff", `k${k}-${i}`, { affinityHash: hash })).sessionId);
      byKey.set(k, owners);
    }
    for (const owners of byKey.values()) expect(owners.size).toBe(1);
    expect(new Set([...byKey.values()].map((s) => [...s][0])).size).toBeGreaterThanOrEqual(2);
  });

  it("the preference yields once that worker's headroom < mean / balanceFactor (2)", async () => {
    const ws: Array<{ sid: string; server: ChallengeServer }> = [];
    for (let i = 0; i < 4; i++) ws.push(await registerWorker(pb, ["/yield"], { headroom: 1000 }));
    const hash = await affinityHash("tenant-7");
    const preferred = (await resolve("/yield", "y-first", { affinityHash: hash })).sessionId;
    const p = ws.find((w) => w.sid === preferred)!;

    // 500 ≥ (500 + 3 × ~1000) / 4 / 2 ≈ 437: still preferred.
    await heartbeat(p.server, p.sid, { headroom: 500 });
    for (let i = 0; i < 20; i++)
      expect((await resolve("/yield", `y-a-${i}`, { affinityHash: hash })).sessionId).toBe(preferred);

    // 400 < (400 + 3 × ~1000) / 4 / 2 ≈ 425: yields to power of two, which never picks the lowest headroom.
    await heartbeat(p.server, p.sid, { headroom: 400 });
    for (let i = 0; i < 20; i++)
      expect((await resolve("/yield", `y-b-${i}`, { affinityHash: hash })).sessionId).not.toBe(preferred);
  });

  it("prefers an attested caller's own session, unless it is below the balance floor", async () => {
    const ws: Array<{ sid: string; server: ChallengeServer }> = [];
    for (let i = 0; i < 4; i++) ws.push(await registerWorker(pb, ["/caller"], { headroom: 1000 }));
    const q = ws[2]!;
    for (let i = 0; i < 20; i++)
      expect((await resolve("/caller", `c-${i}`, { callerSessionId: q.sid })).sessionId).toBe(q.sid);
    await heartbeat(q.server, q.sid, { headroom: 10 });
    for (let i = 0; i < 20; i++)
      expect((await resolve("/caller", `c2-${i}`, { callerSessionId: q.sid })).sessionId).not.toBe(q.sid);
  });

  it("power of two spreads roughly evenly over equal headroom", async () => {
    const sids: string[] = [];
    for (let i = 0; i < 4; i++) sids.push(await worker(["/p2c"], { headroom: 1000 }));
    const counts = new Map(sids.map((s) => [s, 0]));
    const N = 400;
    for (let i = 0; i < N; i++) {
      const { sessionId } = await resolve("/p2c", `p-${i}`);
      counts.set(sessionId, counts.get(sessionId)! + 1);
    }
    // Expected 100 each. Random choice alone has σ ≈ 8.7; the headroom comparison only evens it
    // out further. ±40 (over 4.5 σ) keeps this from ever flaking while still catching a skew.
    for (const n of counts.values()) {
      expect(n).toBeGreaterThanOrEqual(60);
      expect(n).toBeLessThanOrEqual(140);
    }
  });

  it("power of two prefers higher headroom (and never picks the lowest)", async () => {
    const byHeadroom: Array<[number, string]> = [];
    for (const headroom of [400, 300, 200, 100]) byHeadroom.push([headroom, await worker(["/p2c-h"], { headroom })]);
    const counts = new Map(byHeadroom.map(([, s]) => [s, 0]));
    for (let i = 0; i < 300; i++) {
      const { sessionId } = await resolve("/p2c-h", `h-${i}`);
      counts.set(sessionId, counts.get(sessionId)! + 1);
    }
    const [n400, n300, n200, n100] = byHeadroom.map(([, s]) => counts.get(s)!);
    // Each of the 6 pairs is equally likely and the higher wins: expected 150 / 100 / 50 / 0.
    expect(n400).toBeGreaterThan(n300!);
    expect(n300).toBeGreaterThan(n200!);
    expect(n200).toBeGreaterThan(n100!);
    expect(n100).toBe(0);
  });
});
