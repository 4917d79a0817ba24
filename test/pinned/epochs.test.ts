import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisDurabilityStore } from "../../src/pinned/index.ts";
import { durableStore } from "../support/durability.ts";
import { freshGate } from "../support/gates.ts";
import { HeldCounter } from "../support/held-instances.ts";
import { type LocalWorker, startLocalWorker, until } from "../support/local-worker.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { Counter, Room, Slow } from "../support/sample-instances.ts";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(() => redis.stop());

const body = async (res: Response) => (await res.json()) as Record<string, unknown>;

/** Wakes until one is not 202 {activating:true} (each 202 checked), and that one is 200 {ok:true}. */
async function wakesUntilDone(wake: () => Promise<Response>): Promise<void> {
  const done = await until(async () => {
    const res = await wake();
    if (res.status === 202) {
      expect(await res.json()).toEqual({ activating: true });
      return null;
    }
    return res;
  }, 10_000);
  expect(done.status).toBe(200);
  expect(await done.json()).toEqual({ ok: true });
}

describe("epoch guard", () => {
  let w: LocalWorker;
  beforeAll(async () => {
    // HeldCounter is the Counter plus a read-modify-write that waits for the test (…/held-increment).
    w = await startLocalWorker({ namespaces: { "/counter": HeldCounter, "/room": Room, "/slow": Slow } });
  });
  afterAll(() => w.close());

  it("serves the activation epoch, refuses a lower one with 409, re-hydrates at a higher one", async () => {
    expect((await body(await w.call("/counter/e1/increment", { method: "POST", epoch: "10" }))).count).toBe(1);
    expect((await body(await w.call("/counter/e1", { epoch: "10" }))).memoryHits).toBe(2);

    const stale = await w.call("/counter/e1", { epoch: "9" });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({ detail: "stale placement epoch" });

    const newer = await body(await w.call("/counter/e1", { epoch: "11" }));
    expect(newer).toMatchObject({ count: 1, memoryHits: 1, epoch: "11" });

    const older = await w.call("/counter/e1", { epoch: "10" });
    expect(older.status).toBe(409);
    expect(await older.json()).toEqual({ detail: "stale placement epoch" });
    expect((await body(await w.call("/counter/e1", { epoch: "11" }))).memoryHits).toBe(2);
  });

  it("compares epochs as numbers, not strings", async () => {
    await w.call("/counter/e2", { epoch: "9" });
    expect((await w.call("/counter/e2", { epoch: "10" })).status).toBe(200);
    const nine = await w.call("/counter/e2", { epoch: "9" });
    expect(nine.status).toBe(409);
    expect(await nine.json()).toEqual({ detail: "stale placement epoch" });
    expect((await w.call("/counter/e2", { epoch: "0010" })).status).toBe(200);
  });

  it("activates once for concurrent requests at a new epoch", async () => {
    const before = Counter.constructed;
    const answers = await Promise.all(Array.from({ length: 20 }, () => w.call("/counter/e3", { epoch: "30" })));
    expect(answers.every((r) => r.status === 200)).toBe(true);
    expect(Counter.constructed - before).toBe(1);
    const again = await Promise.all(Array.from({ length: 10 }, () => w.call("/counter/e3", { epoch: "31" })));
    expect(again.every((r) => r.status === 200)).toBe(true);
    expect(Counter.constructed - before).toBe(2);
  });

  it("fences a write still in flight at the old epoch once a higher epoch re-hydrated", async () => {
    await w.call("/counter/e4/increment", { method: "POST", epoch: "40" });
    // A write at epoch 40 that has read the count and is held before it stores count + 1 …
    const held = freshGate("e4");
    const slow = w.call(`/counter/e4/held-increment?gate=${held.name}`, { method: "POST", epoch: "40" });
    await held.arrived(1);
    // … while epoch 41 re-hydrates and writes …
    expect((await w.call("/counter/e4/increment", { method: "POST", epoch: "41" })).status).toBe(200);
    // … then stores: fenced.
    held.open();
    const late = await slow;
    expect(late.status).toBe(409);
    expect(await late.json()).toEqual({ detail: "stale placement epoch" });
    expect((await body(await w.call("/counter/e4", { epoch: "41" }))).count).toBe(2);
  });
});

describe("two workers sharing a Redis durability store", () => {
  let a: LocalWorker, b: LocalWorker, storeA: RedisDurabilityStore, storeB: RedisDurabilityStore;
  beforeAll(async () => {
    storeA = durableStore(redis, "fight:");
    storeB = durableStore(redis, "fight:");
    a = await startLocalWorker({ durability: storeA });
    b = await startLocalWorker({ durability: storeB });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await storeA.close();
    await storeB.close();
  });

  it("lets only the newest epoch write; the stale owner is evicted", async () => {
    expect((await body(await a.call("/counter/x/increment", { method: "POST", epoch: "5" }))).count).toBe(1);
    expect((await body(await b.call("/counter/x/increment", { method: "POST", epoch: "6" }))).count).toBe(2);

    const stale = await a.call("/counter/x/increment", { method: "POST", epoch: "5" });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({ detail: "stale placement epoch" });
    expect(a.worker.instances()).toEqual([]);

    // A forward to A still on its way at that epoch is refused in-band (Pinboard re-places it where
    // the instance is now), never served by a fresh activation.
    const ended = await a.call("/counter/x", { epoch: "5" });
    expect(ended.status).toBe(503);
    expect(ended.headers.get("pinned-refusal")).toBe("lease-unhealthy");
    expect(await ended.json()).toEqual({ detail: "placement epoch ended here" });
    expect(a.worker.instances()).toEqual([]);

    // A worker that never held the instance (a restarted process) is fenced by the store at activation.
    const storeC = durableStore(redis, "fight:");
    const fresh = await startLocalWorker({ durability: storeC });
    try {
      const fenced = await fresh.call("/counter/x", { epoch: "5" });
      expect(fenced.status).toBe(409);
      expect(await fenced.json()).toEqual({ detail: "stale placement epoch" });
    } finally {
      await fresh.close();
      await storeC.close();
    }
    expect(await redis.redis.client.hget("fight:{/counter/x}:meta", "epoch")).toBe("6");
    expect(JSON.parse((await redis.redis.client.hget("fight:{/counter/x}:data", "count"))!)).toBe(2);

    // A newer placement back on A claims the instance from B.
    expect((await body(await a.call("/counter/x/increment", { method: "POST", epoch: "7" }))).count).toBe(3);
    const overtaken = await b.call("/counter/x/increment", { method: "POST", epoch: "6" });
    expect(overtaken.status).toBe(409);
    expect(await overtaken.json()).toEqual({ detail: "stale placement epoch" });
  });
});

describe("a read at an epoch another worker has claimed since", () => {
  let a: LocalWorker, b: LocalWorker, storeA: RedisDurabilityStore, storeB: RedisDurabilityStore;
  beforeAll(async () => {
    storeA = durableStore(redis, "reads:");
    storeB = durableStore(redis, "reads:");
    a = await startLocalWorker({ durability: storeA });
    b = await startLocalWorker({ durability: storeB });
  });
  afterAll(async () => {
    await a.close();
    await b.close();
    await storeA.close();
    await storeB.close();
  });

  it("is refused 409 and evicts the stale activation: reads are fenced, not only writes", async () => {
    expect((await body(await a.call("/counter/r/increment", { method: "POST", epoch: "5" }))).count).toBe(1);
    // B claims the instance at 6 and writes; A's activation at 5 is still resident and hears of it
    // only from the store.
    expect((await body(await b.call("/counter/r/increment", { method: "POST", epoch: "6" }))).count).toBe(2);
    expect(a.worker.instances()).toHaveLength(1);

    const stale = await a.call("/counter/r", { epoch: "5" });
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({ detail: "stale placement epoch" });
    expect(a.worker.instances()).toEqual([]);
    expect((await body(await b.call("/counter/r", { epoch: "6" }))).count).toBe(2);
  });
});

describe("refusing new activations", () => {
  it("refuses while draining, with 503, Retry-After: 1 and Pinned-Refusal: lease-unhealthy", async () => {
    const w = await startLocalWorker();
    try {
      expect((await w.call("/counter/d1", { epoch: "3" })).status).toBe(200);
      await w.worker.drain();
      expect(w.worker.draining).toBe(true);

      const refused = await w.call("/counter/d2", { epoch: "3" });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("retry-after")).toBe("1");
      expect(refused.headers.get("pinned-refusal")).toBe("lease-unhealthy");

      // A resident instance keeps serving its epoch.
      expect((await w.call("/counter/d1", { epoch: "3" })).status).toBe(200);
      // A higher epoch is a new activation: refused, and the stale activation goes.
      expect((await w.call("/counter/d1", { epoch: "4" })).status).toBe(503);
      expect(w.worker.instances()).toEqual([]);
    } finally {
      await w.close();
    }
  });

  it("refuses while the lease is unhealthy (Pinboard unreachable)", async () => {
    const w = await startLocalWorker({ pinboardUrl: "http://127.0.0.1:9" });
    const started = w.worker.start();
    started.catch(() => {});
    try {
      const refused = await w.call("/counter/u1", { epoch: "3" });
      expect(refused.status).toBe(503);
      expect(refused.headers.get("pinned-refusal")).toBe("lease-unhealthy");
      expect(await refused.json()).toEqual({ detail: "lease unhealthy" });
    } finally {
      await w.close();
      await expect(started).rejects.toThrow(/stopped/);
    }
  });

  it("refuses beyond maxInstances and reports the remaining headroom", async () => {
    const w = await startLocalWorker({ maxInstances: 2 });
    try {
      expect((await w.call("/counter/m1")).status).toBe(200);
      expect((await w.call("/counter/m2")).status).toBe(200);
      const refused = await w.call("/counter/m3");
      expect(refused.status).toBe(503);
      expect(refused.headers.get("pinned-refusal")).toBe("lease-unhealthy");
      expect(w.worker.stats().headroom).toBe(0);
    } finally {
      await w.close();
    }
  });
});

describe("POST /{ns}/{id}/_wake with a durability store", () => {
  let w: LocalWorker;
  let store: RedisDurabilityStore;
  beforeAll(async () => {
    store = durableStore(redis, "wake:");
    w = await startLocalWorker({ durability: store, wakeWaitMs: 100 });
  });
  afterAll(async () => {
    await w.close();
    await store.close();
  });

  it("answers 200 {ok:true} once the instance is resident at that epoch", async () => {
    // Hydrating from Redis may outlast wakeWaitMs (100 ms) on a loaded machine: until then every
    // wake answers 202 {activating:true}; the first other answer is 200 {ok:true}.
    const wake = () => w.call("/counter/k1/_wake", { method: "POST", epoch: "12" });
    await wakesUntilDone(wake);
    // Resident now: a wake answers 200 at once, without waiting.
    const res = await wake();
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ ok: true });
    expect(w.worker.instances()).toContainEqual({ ns: "/counter", id: "k1", epoch: "12" });
    expect(await store.epochOf({ ns: "/counter", id: "k1" })).toBe("12");
  });

  it("answers 202 {activating:true} while hydrating, then 200", async () => {
    const first = await w.call("/slow/k2/_wake", { method: "POST", epoch: "12" });
    expect(first.status).toBe(202);
    expect(await first.json()).toEqual({ activating: true });
    // Every wake answers 202 {activating:true} until the activation is done, then 200 {ok:true}.
    await wakesUntilDone(() => w.call("/slow/k2/_wake", { method: "POST", epoch: "12" }));
    expect((await body(await w.call("/slow/k2", { epoch: "12" }))).ready).toBe(true);
  });

  it("answers 409 for a stale epoch", async () => {
    const res = await w.call("/counter/k1/_wake", { method: "POST", epoch: "11" });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ detail: "stale placement epoch" });
  });

  it("requires a valid attestation", async () => {
    for (const attestation of [null, "not.a.jws"]) {
      const res = await w.call("/counter/k1/_wake", { method: "POST", attestation });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ detail: "invalid attestation" });
    }
  });
});
