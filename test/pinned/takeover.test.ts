import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisDurabilityStore } from "../../src/pinned/index.ts";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { durableStore } from "../support/durability.ts";
import { type Fleet, startCounterFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { directForward, partitionableFetch, untilServed } from "../support/pinboard-calls.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import type { CounterAnswer } from "../support/sample-instances.ts";

/**
 * Ownership changes against the real Pinboard Node entry: a worker cut off from Pinboard past
 * its lease reclaiming its instances, a dead worker's instances moving with their durable state,
 * and two workers holding one id where only the newest epoch can write.
 */

const LEASE_MS = 3000;
const keys = new Keys("pinboard:", 16);
let fleet: Fleet;
let durable: TestRedis;
const stores: RedisDurabilityStore[] = [];

beforeAll(async () => {
  durable = await startTestRedis();
  fleet = await startCounterFleet(LEASE_MS);
});
afterAll(async () => {
  await fleet.close();
  await Promise.all(stores.map((s) => s.close()));
  await durable.stop();
});

const url = (path: string) => `${fleet.pb.url}${path}`;
const json = async (res: Response) => (await res.json()) as CounterAnswer;
const sharedStore = () => {
  const store = durableStore(durable);
  stores.push(store);
  return store;
};
async function stopAll(): Promise<void> {
  await Promise.all(fleet.workers.splice(0).map((w) => w.stop()));
}

describe("a worker cut off from Pinboard past its lease", () => {
  afterAll(stopAll);

  it("refuses new activations while its lease is unhealthy, then re-registers and reclaims its instances", async () => {
    const net = partitionableFetch();
    const a = await fleet.addWorker({ fetch: net.fetch, durability: sharedStore() });
    const first = await json(await fetch(url("/counter/p1")));
    expect(first.memoryHits).toBe(1);
    const oldSession = a.worker.sessionId;

    net.down = true;
    await until(() => a.worker.stats().leaseHealthy === false);
    // The worker refuses new activations once 2/3 of its lease passed without a renewal; by then
    // Pinboard's record of it has less than min(5000, lease / 3) left, so it is no candidate for
    // a new placement either: the only worker is out and the answer is the contract's no-backends
    // refusal, decided before any forward (nothing placed, nothing activated).
    const refused = await fetch(url("/counter/p2"));
    expect({
      status: refused.status,
      retryAfter: refused.headers.get("retry-after"),
      refusal: refused.headers.get("pinned-refusal"),
      body: await refused.json(),
    }).toEqual({ status: 503, retryAfter: "1", refusal: null, body: { error: "no live backends for namespace" } });
    expect(a.worker.instances().some((i) => i.id === "p2")).toBe(false);
    const row = keys.placements(await keys.bucketOf("p2"), SINGLE_ENV, "/counter");
    expect(await fleet.t.redis.client.hget(row, "p2")).toBeNull();
    await new Promise((r) => setTimeout(r, LEASE_MS + 500));
    net.down = false;

    await until(() => a.worker.sessionId !== oldSession && a.worker.sessionId !== null, 10_000);
    const stats = a.worker.stats();
    expect(stats.reregistrations).toBe(1);
    expect(stats.leaseFlaps).toBeGreaterThanOrEqual(1);
    // Reclaimed with prevSessionId: the same activation serves on at the same epoch.
    expect(a.worker.instances()).toContainEqual({ ns: "/counter", id: "p1", epoch: first.epoch });
    const again = await json(await untilServed(url("/counter/p1")));
    expect(again).toMatchObject({ memoryHits: 2, epoch: first.epoch });
  });
});

describe("a worker that dies", () => {
  afterAll(stopAll);

  it("has its instances re-placed on another worker, with their durable state", async () => {
    const net = partitionableFetch();
    const a = await fleet.addWorker({ fetch: net.fetch, durability: sharedStore() });
    for (let i = 0; i < 3; i++) await fetch(url("/counter/m1/increment"), { method: "POST" });
    const before = await json(await fetch(url("/counter/m1")));
    expect(before.count).toBe(3);
    const b = await fleet.addWorker({ durability: sharedStore() });

    // Dead: no heartbeats, nothing listening.
    net.down = true;
    await a.listening.close();

    const after = await json(await untilServed(url("/counter/m1"), {}, 15_000));
    expect(after.count).toBe(3);
    expect(after.memoryHits).toBe(1);
    expect(BigInt(after.epoch)).toBeGreaterThan(BigInt(before.epoch));
    expect(b.worker.instances()).toContainEqual({ ns: "/counter", id: "m1", epoch: after.epoch });
  });
});

describe("two workers holding one id", () => {
  afterAll(stopAll);

  it("lets only the newest epoch write durable state", async () => {
    const net = partitionableFetch();
    const storeA = sharedStore();
    const a = await fleet.addWorker({ fetch: net.fetch, durability: storeA });
    const placedOnA = await json(await fetch(url("/counter/x/increment"), { method: "POST" }));
    expect(placedOnA.count).toBe(1);
    const b = await fleet.addWorker({ durability: sharedStore() });

    // A takes a read-modify-write while its lease holds; it writes only after x has moved
    // (…/slow-increment sleeps between its read and its write).
    const late = directForward(a.worker, `/counter/x/slow-increment?ms=${3 * LEASE_MS}`, placedOnA.epoch, {
      method: "POST",
    });
    const inflight = () => (a.worker.stats().instances as { id: string; inflight: number }[]).find((i) => i.id === "x");
    await until(() => inflight()?.inflight === 1);

    // A loses its lease but keeps the instance in memory; Pinboard re-places x on B.
    net.down = true;
    await new Promise((r) => setTimeout(r, LEASE_MS + 500));
    const onB = await json(await untilServed(url("/counter/x/increment"), { method: "POST" }, 15_000));
    expect(onB.count).toBe(2);
    expect(BigInt(onB.epoch)).toBeGreaterThan(BigInt(placedOnA.epoch));
    expect(a.worker.instances()).toContainEqual({ ns: "/counter", id: "x", epoch: placedOnA.epoch });

    // A forward at A's epoch arriving now is refused before it reaches the instance: A's lease
    // lapsed, so it cannot know it still owns x (the refusal makes Pinboard re-place it).
    const lapsed = await directForward(a.worker, "/counter/x", placedOnA.epoch);
    expect({
      status: lapsed.status,
      refusal: lapsed.headers.get("pinned-refusal"),
      body: await lapsed.json(),
    }).toEqual({ status: 503, refusal: "lease-unhealthy", body: { detail: "lease lapsed" } });
    // The refusal releases the placement at Pinboard, so A retires the activation.
    expect(a.worker.instances()).toEqual([]);

    // The write A took before is fenced.
    const stale = await late;
    expect(stale.status).toBe(409);
    expect(await stale.json()).toEqual({ detail: "stale placement epoch" });
    expect(a.worker.instances()).toEqual([]);

    const ref = { ns: "/counter", id: "x" };
    expect(await storeA.epochOf(ref)).toBe(onB.epoch);
    expect(await storeA.get(ref, ["count"])).toEqual(["2"]);
    const onBAgain = await json(await fetch(url("/counter/x/increment"), { method: "POST" }));
    expect(onBAgain).toMatchObject({ count: 3, epoch: onB.epoch });

    net.down = false;
    await until(() => a.worker.stats().reregistrations === 1, 10_000);
    expect(b.worker.instances()).toContainEqual({ ns: "/counter", id: "x", epoch: onB.epoch });
  });
});
