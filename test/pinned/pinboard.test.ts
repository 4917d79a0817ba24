import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AttestationClaims } from "../../src/contract/attestation.ts";
import type { RedisDurabilityStore } from "../../src/pinned/index.ts";
import { type Fleet, type FleetWorker, type OneWorkerFleet, startOneWorkerFleet } from "../support/fleet.ts";
import { until } from "../support/local-worker.ts";
import { untilServed } from "../support/pinboard-calls.ts";
import { Counter, type CounterAnswer, Room } from "../support/sample-instances.ts";

/** The library against the real Pinboard Node entry: registration, heartbeats, forwards, a flushed Redis. */

const LEASE_MS = 3000;
let fleet: Fleet, store: RedisDurabilityStore, w: FleetWorker, one: OneWorkerFleet;

beforeAll(async () => {
  one = await startOneWorkerFleet({
    leaseMs: LEASE_MS,
    namespaces: { "/counter": Counter, "/room": Room },
    clientId: "pinned-it-1",
  });
  ({ fleet, worker: w, store } = one);
});
afterAll(() => one?.close());

const url = (path: string) => `${fleet.pb.url}${path}`;
/** A JSON answer, read as `T` (Counter's by default). */
const json = async <T = CounterAnswer>(res: Response) => (await res.json()) as T;

describe("registration", () => {
  it("registers (Pinboard's probe got the challenge value) and keeps the lease alive by heartbeats", async () => {
    const sessionId = w.worker.sessionId;
    expect(sessionId).toMatch(/\S/);
    await new Promise((r) => setTimeout(r, LEASE_MS + 1000));
    expect(w.worker.sessionId).toBe(sessionId);
    const stats = w.worker.stats();
    expect(stats).toMatchObject({ reregistrations: 0, leaseFlaps: 0, leaseHealthy: true, draining: false });
    expect((await fetch(url("/counter/r1"))).status).toBe(200);
  });

  it("answers 404 for a challenge other than the current one", async () => {
    const res = await fetch(`${w.worker.advertiseUrl}/_pinned/challenge?challenge=stale`, {
      headers: { "Pinboard-Proxy-Secret": w.worker.secret },
    });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ detail: "unknown challenge" });
  });
});

describe("forwards through Pinboard", () => {
  it("activates the instance at the placement epoch and keeps serving it there", async () => {
    const first = await json(await fetch(url("/counter/c1/increment"), { method: "POST" }));
    expect(first.count).toBe(1);
    expect(first.epoch).toMatch(/^\d+$/);
    const second = await json(await fetch(url("/counter/c1")));
    expect(second).toMatchObject({ count: 1, memoryHits: 2, epoch: first.epoch });
    expect(w.worker.instances()).toContainEqual({ ns: "/counter", id: "c1", epoch: first.epoch });
    expect(await store.epochOf({ ns: "/counter", id: "c1" })).toBe(first.epoch);
  });

  it("gives the instance Pinboard's attestation (aud = the sessionId)", async () => {
    const claims = await json<AttestationClaims>(await fetch(url("/counter/c1/whoami")));
    expect(claims.aud).toBe(w.worker.sessionId);
    expect(claims.exp - claims.iat).toBe(30);
  });
});

describe("after Pinboard's Redis is flushed", () => {
  it("re-registers from the heartbeat, evicts what Pinboard no longer knows, and re-places it with its durable state", async () => {
    const before = await json(await fetch(url("/counter/f1/increment"), { method: "POST" }));
    await fetch(url("/counter/f1/increment"), { method: "POST" });
    const oldSession = w.worker.sessionId;

    await fleet.t.flush();
    await until(() => w.worker.sessionId !== oldSession && w.worker.sessionId !== null, 10_000);
    expect(w.worker.stats().reregistrations).toBe(1);
    // Pinboard lost every row, so the resident ids came back as duplicates and were evicted.
    await until(() => !w.worker.instances().some((i) => i.id === "f1"));

    await fleet.skipColdStart();
    const after = await json(await untilServed(url("/counter/f1")));
    expect(after.count).toBe(2);
    expect(after.memoryHits).toBe(1);
    expect(BigInt(after.epoch)).toBeGreaterThan(BigInt(before.epoch));
  });
});
