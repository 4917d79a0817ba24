import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { type Fleet, type FleetWorker, type OneWorkerFleet, startOneWorkerFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { untilServed } from "../support/pinboard-calls.ts";
import { Counter, type CounterAnswer } from "../support/sample-instances.ts";

/** What operators do to a worker through the real Pinboard: wind_down, drain, stats. */

// Long enough that a loaded machine does not make the worker's lease lapse (a heartbeat that renews
// a lapsed lease retires every activation, and these tests watch activations).
const LEASE_MS = 6000;
let fleet: Fleet, w: FleetWorker, operator: string, one: OneWorkerFleet;

beforeAll(async () => {
  one = await startOneWorkerFleet({ leaseMs: LEASE_MS, namespaces: { "/counter": Counter }, clientId: "op-worker" });
  ({ fleet, worker: w } = one);
  operator = await fleet.pb.operatorCredential();
});
afterAll(() => one?.close());

const url = (path: string) => `${fleet.pb.url}${path}`;
/** A JSON answer, read as `T`. */
const json = async <T = Record<string, unknown>>(res: Response) => (await res.json()) as T;
/** The parts of a worker's GET /_pinned/stats answer the tests read. */
interface PinnedStats {
  process: { uptimeMs: number; rssBytes: number };
  namespaces: Record<string, { instances: number }>;
  instances: unknown[];
}

/** An operator call: its status and JSON body together, so every answer is asserted whole. */
const op = async (path: string, body: unknown) => {
  const res = await fetch(url(path), {
    method: "POST",
    headers: { authorization: `Bearer ${operator}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: await json(res) };
};
const ok = (body: unknown) => ({ status: 200, body });
/** A data-plane answer: status, Retry-After and JSON body. */
const answer = async <T = Record<string, unknown>>(res: Response) => ({
  status: res.status,
  retryAfter: res.headers.get("retry-after"),
  body: await json<T>(res),
});
const resident = (id: string) => w.worker.instances().find((i) => i.id === id);
async function placedIds(): Promise<string[]> {
  const overview = await json(
    await fetch(url("/registry/overview?ns=/counter"), { headers: { authorization: `Bearer ${operator}` } }),
  );
  return (overview.namespaces as { entries: { id: string }[] }[]).flatMap((n) => n.entries.map((e) => e.id));
}
const queueLength = () => fleet.t.redis.client.hlen(new Keys("pinboard:", 16).queue(w.worker.sessionId!));

describe("wind_down", () => {
  it("with a deadline: the worker acks, evicts at the deadline and releases its placement", async () => {
    const first = await answer<CounterAnswer>(await fetch(url("/counter/w1/increment"), { method: "POST" }));
    expect(first).toEqual({ status: 200, retryAfter: null, body: { count: 1, epoch: expect.stringMatching(/^\d+$/) } });
    const placed = first.body;
    expect(await placedIds()).toContain("w1");
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w1", deadline: 1 })).toEqual(
      ok({ queued: true }),
    );

    // Acked: Pinboard stops re-delivering. Until the deadline (max(1 s, lease)) it keeps serving,
    // the same activation at the same epoch.
    await until(async () => (await queueLength()) === 0, LEASE_MS + 2000);
    expect(resident("w1")).toEqual({ ns: "/counter", id: "w1", epoch: placed.epoch });
    expect(await answer(await fetch(url("/counter/w1")))).toEqual({
      status: 200,
      retryAfter: null,
      body: { ns: "/counter", id: "w1", count: 1, memoryHits: 2, epoch: placed.epoch, path: "" },
    });

    await until(() => resident("w1") === undefined, LEASE_MS + 3000);
    // Released (the row is deleted), not merely expired (an expired row stays until re-placed).
    const keys = new Keys("pinboard:", 16);
    const row = keys.placements(await keys.bucketOf("w1"), SINGLE_ENV, "/counter");
    await until(async () => (await fleet.t.redis.client.hget(row, "w1")) === null, 3000);
    expect(await placedIds()).not.toContain("w1");

    // The next request places it afresh, with its durable state.
    const again = await json<CounterAnswer>(await untilServed(url("/counter/w1")));
    expect(again.count).toBe(placed.count);
    expect(BigInt(again.epoch)).toBeGreaterThan(BigInt(placed.epoch));
  });

  it("with a null deadline: a pending wind-down is revoked", async () => {
    const placed = await json<CounterAnswer>(await fetch(url("/counter/w2")));
    // A deadline well past the two heartbeats that deliver the order and then its revocation.
    const postedAt = Date.now();
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w2", deadline: 12 })).toEqual(
      ok({ queued: true }),
    );
    await until(async () => (await queueLength()) === 0, LEASE_MS + 2000);
    expect(await op("/registry/wind_down", { namespace: "/counter", id: "w2", deadline: null })).toEqual(
      ok({ queued: true }),
    );
    await until(async () => (await queueLength()) === 0, LEASE_MS + 2000);

    // Past the revoked deadline: had the revoke not taken, w2 would be gone.
    await new Promise((r) => setTimeout(r, Math.max(0, postedAt + 13_000 - Date.now())));
    expect(resident("w2")).toEqual({ ns: "/counter", id: "w2", epoch: placed.epoch });
    expect(await placedIds()).toContain("w2");
    expect(await json(await fetch(url("/counter/w2")))).toMatchObject({ epoch: placed.epoch, memoryHits: 2 });
  });
});

describe("GET /registry/stats", () => {
  it("relays the worker's stats", async () => {
    const body = await json(await fetch(url("/registry/stats"), { headers: { authorization: `Bearer ${operator}` } }));
    const entry = (body.workers as { sessionId: string; stats: PinnedStats }[]).find(
      (x) => x.sessionId === w.worker.sessionId,
    )!;
    // The worker's own counts (a loaded machine may have cost it a lease), as it reports them.
    const own = w.worker.stats();
    expect(entry.stats).toMatchObject({
      draining: false,
      leaseFlaps: own.leaseFlaps,
      reregistrations: own.reregistrations,
    });
    expect(entry.stats.process.rssBytes).toBeGreaterThan(0);
    expect(entry.stats.namespaces["/counter"]?.instances).toBeGreaterThanOrEqual(1);
    expect(entry.stats.instances).toContainEqual(expect.objectContaining({ ns: "/counter", id: "w2" }));
  });
});

describe("operator drain", () => {
  it("cordon (null deadline): the worker reports draining and refuses new activations; undrain lifts it", async () => {
    const held = await answer(await fetch(url("/counter/d0")));
    expect(held).toMatchObject({ status: 200, body: { memoryHits: 1, epoch: expect.stringMatching(/^\d+$/) } });
    expect(await op("/registry/drain", { clientId: "op-worker", deadline: null })).toEqual(ok({ drained: true }));
    await until(() => w.worker.draining, LEASE_MS);
    // An existing placement still routes to the cordoned worker, at its epoch …
    expect(await answer(await fetch(url("/counter/d0")))).toMatchObject({
      status: 200,
      body: { memoryHits: 2, epoch: held.body.epoch },
    });
    // … a new one has no candidate left (the only worker is draining): the contract's refusal.
    expect(await answer(await fetch(url("/counter/d-new")))).toEqual({
      status: 503,
      retryAfter: "1",
      body: { error: "no live backends for namespace" },
    });
    expect(await placedIds()).not.toContain("d-new");

    expect(await op("/registry/undrain", { clientId: "op-worker" })).toEqual(ok({ revoked: true }));
    await until(() => !w.worker.draining, LEASE_MS);
    expect((await untilServed(url("/counter/d-new"))).status).toBe(200);
  });

  it("timed: every instance is wound down and released at the deadline", async () => {
    for (const id of ["t1", "t2"]) expect((await answer(await fetch(url(`/counter/${id}`)))).status).toBe(200);
    expect(w.worker.instances().length).toBeGreaterThanOrEqual(2);
    expect(await op("/registry/drain", { clientId: "op-worker", deadline: 1 })).toEqual(ok({ drained: true }));
    await until(() => w.worker.draining, LEASE_MS);
    await until(() => w.worker.instances().length === 0, LEASE_MS + 4000);
  });
});
