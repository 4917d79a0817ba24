import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { RedisDurabilityStore } from "../src/pinned/index.ts";
import { durableStore } from "./support/durability.ts";
import { Keys, SINGLE_ENV } from "../src/redis/keys.ts";
import { startFleet, type Fleet, type FleetWorker } from "./support/fleet.ts";
import { startTestRedis, type TestRedis } from "./support/redis.ts";
import { Counter } from "./support/worker-fixtures.ts";
import { until } from "./support/worker-harness.ts";
import { untilServed } from "./support/worker-pinboard.ts";

/** What operators do to a worker through the real Pinboard: wind_down, drain, stats. */

const LEASE_MS = 3000;
let fleet: Fleet;
let durable: TestRedis;
let store: RedisDurabilityStore;
let w: FleetWorker;
let operator: string;

beforeAll(async () => {
  durable = await startTestRedis();
  store = durableStore(durable);
  fleet = await startFleet({ workers: 0, env: { PINBOARD_LEASE_TTL_MS: String(LEASE_MS) }, namespaces: { "/counter": Counter } });
  w = await fleet.addWorker({ durability: store, clientId: "op-worker" });
  await fleet.skipColdStart();
  operator = await fleet.pb.operatorCredential();
});
afterAll(async () => {
  await fleet.close();
  await store.close();
  await durable.stop();
});

const url = (path: string) => `${fleet.pb.url}${path}`;
const json = async (res: Response) => (await res.json()) as Record<string, any>;
const op = async (path: string, body: unknown) =>
  json(
    await fetch(url(path), {
      method: "POST",
      headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
const resident = (id: string) => w.worker.instances().find((i) => i.id === id);
async function placedIds(): Promise<string[]> {
  const overview = await json(await fetch(url("/registry/overview?ns=/counter"), { headers: { authorization: `Bearer ${operator}` } }));
  return (overview.namespaces as { entries: { id: string }[] }[]).flatMap((n) => n.entries.map((e) => e.id));
}
const queueLength = () => fleet.t.redis.client.hlen(new Keys("pinboard:", 16).queue(w.worker.sessionId!));

describe("wind_down", () => {
  it("with a deadline: the worker acks, evicts at the deadline and releases its placement", async () => {
    const placed = await json(await fetch(url("/counter/w1/increment"), { method: "POST" }));
    expect(await placedIds()).toContain("w1");
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w1", deadline: 1 })).toEqual({ queued: true });

    // Acked: Pinboard stops re-delivering. Until the deadline (max(1 s, lease)) it keeps serving.
    await until(async () => (await queueLength()) === 0, 5000);
    expect(resident("w1")).toBeDefined();
    expect((await fetch(url("/counter/w1"))).status).toBe(200);

    await until(() => resident("w1") === undefined, LEASE_MS + 3000);
    // Released (the row is deleted), not merely expired (an expired row stays until re-placed).
    const keys = new Keys("pinboard:", 16);
    const row = keys.placements(await keys.bucketOf("w1"), SINGLE_ENV, "/counter");
    await until(async () => (await fleet.t.redis.client.hget(row, "w1")) === null, 3000);
    expect(await placedIds()).not.toContain("w1");

    // The next request places it afresh, with its durable state.
    const again = await json(await untilServed(url("/counter/w1")));
    expect(again.count).toBe(placed.count);
    expect(BigInt(again.epoch)).toBeGreaterThan(BigInt(placed.epoch));
  });

  it("with a null deadline: a pending wind-down is revoked", async () => {
    const placed = await json(await fetch(url("/counter/w2")));
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w2", deadline: 4 })).toEqual({ queued: true });
    await until(async () => (await queueLength()) === 0, 5000);
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w2", deadline: null })).toEqual({ queued: true });
    await until(async () => (await queueLength()) === 0, 5000);

    await new Promise((r) => setTimeout(r, 5000));
    expect(resident("w2")).toEqual({ ns: "/counter", id: "w2", epoch: placed.epoch });
    expect(await placedIds()).toContain("w2");
    expect(await json(await fetch(url("/counter/w2")))).toMatchObject({ epoch: placed.epoch, memoryHits: 2 });
  });
});

describe("GET /registry/stats", () => {
  it("relays the worker's stats", async () => {
    const body = await json(await fetch(url("/registry/stats"), { headers: { authorization: `Bearer ${operator}` } }));
    const entry = (body.workers as { sessionId: string; stats: Record<string, any> }[]).find((x) => x.sessionId === w.worker.sessionId)!;
    expect(entry.stats).toMatchObject({ draining: false, leaseFlaps: 0, reregistrations: 0 });
    expect(entry.stats.process.rssBytes).toBeGreaterThan(0);
    expect(entry.stats.namespaces["/counter"].instances).toBeGreaterThanOrEqual(1);
    expect(entry.stats.instances).toContainEqual(expect.objectContaining({ ns: "/counter", id: "w2" }));
  });
});

describe("operator drain", () => {
  it("cordon (null deadline): the worker reports draining and refuses new activations; undrain lifts it", async () => {
    await fetch(url("/counter/d0"));
    expect(await op("/registry/drain", { clientId: "op-worker", deadline: null })).toEqual({ drained: true });
    await until(() => w.worker.draining, 5000);
    expect((await fetch(url("/counter/d0"))).status).toBe(200);
    const refused = await fetch(url("/counter/d-new"));
    expect(refused.status).toBe(503);
    await refused.arrayBuffer();

    expect(await op("/registry/undrain", { clientId: "op-worker" })).toEqual({ revoked: true });
    await until(() => !w.worker.draining, 5000);
    expect((await untilServed(url("/counter/d-new"))).status).toBe(200);
  });

  it("timed: every instance is wound down and released at the deadline", async () => {
    await fetch(url("/counter/t1"));
    await fetch(url("/counter/t2"));
    expect(w.worker.instances().length).toBeGreaterThanOrEqual(2);
    expect(await op("/registry/drain", { clientId: "op-worker", deadline: 1 })).toEqual({ drained: true });
    await until(() => w.worker.draining, 5000);
    await until(() => w.worker.instances().length === 0, LEASE_MS + 4000);
  });
});
