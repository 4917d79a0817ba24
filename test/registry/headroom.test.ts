import { describe, expect, it } from "vitest";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk, registerWarm } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { startWorkersEntry } from "../support/workerd-entry.ts";

/**
 * "The record's headroom is replaced by the heartbeat's. Each new placement decrements the stored
 * value until the next heartbeat", and GET /registry/workers shows it. A placement writes only its
 * own bucket, so each bucket counts its placements per session and the read sums them.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = () => pb.deps.keys;

const register = (ns: string, headroom: number) => registerWarm(t, pb, token, worker, { namespaces: [ns], headroom });

async function heartbeat(sessionId: string, headroom: number, extra: Record<string, unknown> = {}): Promise<void> {
  const res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(worker, sessionId, { headroom, ...extra }),
  });
  expect(res.status, await res.text()).toBe(200);
}

const place = (ns: string, id: string) =>
  resolvePlacement(pb.deps, { ns, id, env: SINGLE_ENV, hostname: "", takeover: "" });

/** `n` ids of distinct buckets (none of them in `avoid`), prefixed. */
async function idsInDistinctBuckets(
  prefix: string,
  n: number,
  avoid: ReadonlySet<number> = new Set(),
): Promise<Array<{ id: string; bucket: number }>> {
  const out: Array<{ id: string; bucket: number }> = [];
  const seen = new Set(avoid);
  for (let i = 0; out.length < n; i++) {
    const id = `${prefix}-${i}`;
    const bucket = await keys().bucketOf(id);
    if (seen.has(bucket)) continue;
    seen.add(bucket);
    out.push({ id, bucket });
  }
  return out;
}

async function listedHeadroom(ns: string, bucket: number, sessionId: string): Promise<number> {
  const entry = await t.redis.hget(keys().nsWorkers(bucket, SINGLE_HOSTNAME, ns), sessionId);
  return Number(entry!.split("\n")[1]);
}

async function workersRoute(): Promise<Array<{ sessionId: string; headroom: number }>> {
  const res = await pb.call("GET", "/registry/workers", { token: await credential("pinboard:operator") });
  expect(res.status).toBe(200);
  return ((await res.json()) as { workers: Array<{ sessionId: string; headroom: number }> }).workers;
}
async function shownHeadroom(sessionId: string): Promise<number> {
  const w = (await workersRoute()).find((x) => x.sessionId === sessionId);
  expect(w).toBeDefined();
  return w!.headroom;
}

describe("the record's headroom", () => {
  it("drops by one per new placement in any bucket; a heartbeat replaces it; forwards spend nothing", async () => {
    const ns = "/hr-basic";
    const sid = await register(ns, 100);
    expect(await shownHeadroom(sid)).toBe(100);

    const N = 6;
    const ids = await idsInDistinctBuckets("basic", N);
    for (const { id } of ids) expect((await place(ns, id)).sessionId).toBe(sid);
    expect(await shownHeadroom(sid)).toBe(100 - N);
    // Requests for the placed ids forward to their owner: no new placement, nothing spent.
    for (const { id } of ids) expect((await place(ns, id)).fresh).toBe(false);
    expect(await shownHeadroom(sid)).toBe(100 - N);

    await heartbeat(sid, 50);
    expect(await shownHeadroom(sid)).toBe(50);
    const more = await idsInDistinctBuckets("basic-more", 3);
    for (const { id } of more) await place(ns, id);
    expect(await shownHeadroom(sid)).toBe(47);
    // Two placements in one bucket count twice.
    let again = 0;
    while ((await keys().bucketOf(`basic-again-${again}`)) !== more[0]!.bucket) again++;
    await place(ns, `basic-again-${again}`);
    expect(await shownHeadroom(sid)).toBe(46);

    // The overview's workers are the same records.
    const res = await pb.call("GET", "/registry/overview?ns=/hr-basic", {
      token: await credential("pinboard:operator"),
    });
    const overview = (await res.json()) as { workers: Array<{ sessionId: string; headroom: number }> };
    expect(overview.workers.find((w) => w.sessionId === sid)!.headroom).toBe(46);

    await heartbeat(sid, 80);
    expect(await shownHeadroom(sid)).toBe(80);
  });

  it("a heartbeat resets every bucket's namespace list entry to its value", async () => {
    const ns = "/hr-reset";
    const sid = await register(ns, 100);
    const ids = await idsInDistinctBuckets("reset", 4);
    for (const { id } of ids) await place(ns, id);
    for (const { bucket } of ids) expect(await listedHeadroom(ns, bucket, sid)).toBe(99);
    await heartbeat(sid, 30);
    for (const b of keys().allBuckets()) expect(await listedHeadroom(ns, b, sid)).toBe(30);
  });

  it("a drain keeps what was spent, and its mirror carries every bucket's spending into every list", async () => {
    const ns = "/hr-drain";
    const other = "/hr-drain-other";
    await endColdStart(t, keys());
    const body = registerBody(worker, { namespaces: [ns, other], headroom: 100 });
    const { sessionId: sid } = await registerOk(pb, token, body);
    const ids = await idsInDistinctBuckets("drain", 5);
    for (const { id } of ids) await place(ns, id);
    const placedIn = new Set(ids.map((x) => x.bucket));
    const elsewhere = keys()
      .allBuckets()
      .find((b) => !placedIn.has(b))!;
    // Before any mirror a bucket sees only its own placements, on the namespace placed in.
    expect(await listedHeadroom(ns, ids[0]!.bucket, sid)).toBe(99);
    expect(await listedHeadroom(other, ids[0]!.bucket, sid)).toBe(100);
    expect(await listedHeadroom(ns, elsewhere, sid)).toBe(100);

    const operator = await credential("pinboard:operator");
    const clientId = body.clientId as string;
    for (const [path, payload] of [
      ["/registry/drain", { clientId, deadline: null }],
      ["/registry/undrain", { clientId }],
    ] as const) {
      const res = await pb.call("POST", path, { token: operator, body: payload });
      expect(res.status).toBe(200);
    }
    expect(await shownHeadroom(sid)).toBe(95);
    // The undrain's mirror: the record's headroom less every placement since, in every list of every bucket.
    for (const b of keys().allBuckets()) {
      expect(await listedHeadroom(ns, b, sid)).toBe(95);
      expect(await listedHeadroom(other, b, sid)).toBe(95);
    }
    // A placement after the mirror spends in its bucket on top of that.
    await place(ns, `drain-after`);
    const b = await keys().bucketOf("drain-after");
    expect(await listedHeadroom(ns, b, sid)).toBe(94);
    expect(await shownHeadroom(sid)).toBe(94);

    await heartbeat(sid, 60);
    expect(await shownHeadroom(sid)).toBe(60);
    for (const bucket of keys().allBuckets()) expect(await listedHeadroom(other, bucket, sid)).toBe(60);
  });

  it("counts of a replaced headroom, and of sessions gone from the bucket, do not count and do not pile up", async () => {
    const ns = "/hr-gc";
    const gone: string[] = [];
    const ids = await idsInDistinctBuckets("gc", 1);
    const bucket = ids[0]!.bucket;
    // Counts of sessions without a mirror are dropped once they outnumber the bucket's mirrors
    // (so they never exceed them): leave more of them behind than the bucket holds mirrors.
    const mirrors = await t.redis.client.hlen(keys().workers(bucket));
    for (let i = 0; i < mirrors + 2; i++) {
      const sid = await register(ns, 10);
      let n = 0;
      while ((await keys().bucketOf(`gc-${i}-${n}`)) !== bucket) n++;
      await place(ns, `gc-${i}-${n}`);
      gone.push(sid);
      const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: sid } });
      expect(res.status).toBe(200);
    }
    const keeper = await register(ns, 10);
    // A count kept under an older headroom revision than the record's is a replaced headroom's.
    await t.redis.client.hset(keys().spent(bucket), keeper, "-1\n7");
    expect(await shownHeadroom(keeper)).toBe(10);
    await heartbeat(keeper, 10);
    const spent = await t.redis.client.hgetall(keys().spent(bucket));
    for (const sid of gone) expect(spent[sid]).toBeUndefined();
    expect(spent[keeper]).toBeUndefined();
  });

  it("the Workers entry (Upstash REST) shows the same headroom", async () => {
    const ns = "/hr-workers";
    const sid = await register(ns, 20);
    for (const { id } of await idsInDistinctBuckets("wk", 5)) await place(ns, id);
    const wk = await startWorkersEntry({ redis: t, env: { PINBOARD_LOG_LEVEL: "error" } });
    try {
      const res = await fetch(`${wk.url}/registry/workers`, {
        headers: { authorization: `Bearer ${await credential("pinboard:operator")}` },
      });
      expect(res.status).toBe(200);
      const { workers } = (await res.json()) as { workers: Array<{ sessionId: string; headroom: number }> };
      expect(workers.find((w) => w.sessionId === sid)!.headroom).toBe(15);
    } finally {
      await wk.stop();
    }
  });
});
