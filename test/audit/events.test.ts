import { describe, expect, it } from "vitest";
import { OutlierTracker } from "../../src/placement/outliers.ts";
import { runSweep } from "../../src/sweeper/sweep.ts";
import { newestOf, readTrail } from "../support/audit-trail.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useAwareRegistryFixture } from "../support/registry-fixture.ts";
import { putRow } from "../support/rows.ts";

/**
 * The fleet's events in the audit trail: a worker registered (with the placements its reclaim
 * moved), drained (it left while draining), deregistered, died (its lease ran out: pruned by a
 * register or by the sweeper), ejected for failing forwards and re-admitted when the ejection ran
 * out. Events have no subject; `via` names the part of Pinboard that noticed them.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string, aware: TestPinboard;
useAwareRegistryFixture((f) => ({ t, pb, worker, token, aware } = f));

const SESSIONS = "pinboard:{global}:sessions";
const EXPIRIES = "pinboard:{global}:session-expiries";
const reader = () => credential("pinboard:operator");
const register = async (clientId: string, overrides: Record<string, unknown> = {}) =>
  (await registerOk(pb, token, registerBody(worker, { namespaces: ["/ev"], clientId, ...overrides }))).sessionId;
const deregister = async (sessionId: string) => {
  const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId } });
  expect(res.status).toBe(200);
};
/** The lease ran out long ago (a rewrite of the record instead of a wait): the next prune drops it. */
async function expireLongAgo(sessionId: string): Promise<number> {
  const record = JSON.parse((await t.redis.hget(SESSIONS, sessionId))!) as { expiry: number };
  const expiry = record.expiry - 100_000;
  await t.redis.client.hset(SESSIONS, sessionId, JSON.stringify({ ...record, expiry }));
  await t.redis.client.zadd(EXPIRIES, expiry, sessionId);
  return expiry;
}

describe("worker events", () => {
  it("worker.registered names the worker; a reclaim counts the placements it moved and the session it replaced", async () => {
    const first = await register("client-reg");
    expect(await newestOf(pb, await reader(), "worker.registered", { sessionId: first })).toMatchObject({
      kind: "event",
      subject: null,
      via: "registry",
      target: { sessionId: first, clientId: "client-reg", namespaces: ["/ev"] },
      detail: { advertiseUrl: worker.url, draining: false, reclaimed: 0, duplicates: 0 },
    });

    await putRow(t, "/ev", "held-1", { sessionId: first, epoch: "7" });
    const second = await register("client-reg", { prevSessionId: first, instances: { "/ev": ["held-1", "held-2"] } });
    expect((await newestOf(pb, await reader(), "worker.registered", { sessionId: second }))?.detail).toEqual({
      advertiseUrl: worker.url,
      draining: false,
      reclaimed: 1,
      duplicates: 1,
      replaced: first,
    });
  });

  it("leaving while draining is worker.drained (its own drain or an operator's), else worker.deregistered", async () => {
    const own = await register("client-own", { draining: true });
    await deregister(own);
    expect(await newestOf(pb, await reader(), "worker.drained", { sessionId: own })).toMatchObject({
      via: "registry",
      target: { sessionId: own, clientId: "client-own" },
      detail: { selfDraining: true },
    });

    const drained = await register("client-op");
    const res = await pb.call("POST", "/registry/drain", {
      token: await reader(),
      body: { clientId: "client-op", deadline: null },
    });
    expect(res.status).toBe(200);
    await deregister(drained);
    expect((await newestOf(pb, await reader(), "worker.drained", { sessionId: drained }))?.detail).toEqual({
      selfDraining: false,
    });

    const plain = await register("client-plain");
    await deregister(plain);
    expect(await newestOf(pb, await reader(), "worker.drained", { sessionId: plain })).toBeUndefined();
    expect(await newestOf(pb, await reader(), "worker.deregistered", { sessionId: plain })).toMatchObject({
      via: "registry",
      detail: {},
    });
  });

  it("worker.died when a register prunes an expired session, and when the sweeper does", async () => {
    const byRegister = await register("client-died-1");
    const expiredAt = await expireLongAgo(byRegister);
    await register("client-pruner");
    expect(await newestOf(pb, await reader(), "worker.died", { sessionId: byRegister })).toMatchObject({
      subject: null,
      via: "registry",
      target: { sessionId: byRegister, clientId: "client-died-1", namespaces: ["/ev"] },
      detail: { expiredAt, draining: false },
    });

    const bySweeper = await register("client-died-2");
    await expireLongAgo(bySweeper);
    expect((await runSweep(pb.deps)).ran).toBe(true);
    expect(await newestOf(pb, await reader(), "worker.died", { sessionId: bySweeper })).toMatchObject({
      via: "sweeper",
      target: { clientId: "client-died-2" },
    });
    // Pruned once, recorded once.
    await runSweep(pb.deps);
    const died = (await readTrail(pb, await reader(), "?type=worker.died&limit=500")).entries;
    expect(died.filter((e) => e.target.sessionId === bySweeper)).toHaveLength(1);
  });

  it("worker.ejected on the failure that ejects; worker.readmitted once the ejection ran out", async () => {
    const ejected = await register("client-eject");
    await register("client-steady"); // ejection keeps at least half the live workers
    const tracker = new OutlierTracker(pb.deps);
    for (let i = 0; i < 5; i++) await tracker.failure(ejected);
    const first = (await newestOf(pb, await reader(), "worker.ejected", { sessionId: ejected }))!;
    expect(first).toMatchObject({ via: "data-plane", subject: null, target: { clientId: "client-eject" } });
    expect(first.detail).toEqual({ ejectedUntil: expect.any(Number), ejections: 1 });
    expect(first.detail.ejectedUntil).toBeGreaterThan(first.at + 29_000);

    // Still running: the sweeper records nothing.
    await runSweep(pb.deps);
    expect(await newestOf(pb, await reader(), "worker.readmitted", { sessionId: ejected })).toBeUndefined();

    // Thirty seconds pass (the ejection's end rewritten instead of waited for): the sweeper records the end once.
    const now = await t.redis.timeMs();
    await t.redis.client.hset("pinboard:{global}:audit:ejections", ejected, String(now - 1));
    await runSweep(pb.deps);
    await runSweep(pb.deps);
    const readmitted = (await readTrail(pb, await reader(), "?type=worker.readmitted")).entries.filter(
      (e) => e.target.sessionId === ejected,
    );
    expect(readmitted).toEqual([
      expect.objectContaining({ via: "sweeper", subject: null, detail: { ejectedUntil: now - 1 } }),
    ]);

    // Ejected again before a sweep saw the last one end: its re-admission comes first, from the data plane.
    await t.redis.client.hset("pinboard:{global}:outliers", ejected, `0\n1\n${now - 1}`);
    await t.redis.client.hset("pinboard:{global}:audit:ejections", ejected, String(now - 1));
    for (let i = 0; i < 5; i++) await tracker.failure(ejected);
    const [second, again] = (await readTrail(pb, await reader(), "?kind=event&limit=2")).entries;
    expect(second).toMatchObject({ type: "worker.ejected", target: { sessionId: ejected }, detail: { ejections: 2 } });
    expect(again).toMatchObject({ type: "worker.readmitted", via: "data-plane", detail: { ejectedUntil: now - 1 } });
  });
});

describe("worker events in hostname-aware mode", () => {
  it("name the worker's hostname and env per namespace, from Lua (died) as from TypeScript (registered)", async () => {
    const fields = { hostname: "h1.example", env: "prod", envs: { "/aw2": "canary" }, namespaces: ["/aw1", "/aw2"] };
    const { sessionId } = await registerOk(aware, token, registerBody(worker, { clientId: "client-aware", ...fields }));
    const record = JSON.parse((await t.redis.hget("aware:{global}:sessions", sessionId))!) as { expiry: number };
    await t.redis.client.hset("aware:{global}:sessions", sessionId, JSON.stringify({ ...record, expiry: 1 }));
    await t.redis.client.zadd("aware:{global}:session-expiries", 1, sessionId);
    await registerOk(aware, token, registerBody(worker, { clientId: "client-pruner", ...fields }));

    const target = {
      sessionId,
      clientId: "client-aware",
      namespaces: ["/aw1", "/aw2"],
      hostname: "h1.example",
      envs: { "/aw1": "prod", "/aw2": "canary" },
    };
    const all = await credential("pinboard:operator");
    const types = (await readTrail(aware, all, "?limit=500")).entries
      .filter((e) => e.target.sessionId === sessionId)
      .map((e) => [e.type, e.target]);
    expect(types).toEqual([
      ["worker.died", target],
      ["worker.registered", target],
    ]);

    // A claim on the canary env sees the worker's /aw2 side only; one on another hostname, nothing.
    const canary = await credential("pinboard:operator", { envs: ["canary"] });
    const seen = (await readTrail(aware, canary, "?limit=500")).entries.filter((e) => e.target.sessionId === sessionId);
    expect(seen.map((e) => e.target.namespaces)).toEqual([["/aw2"], ["/aw2"]]);
    expect(seen.map((e) => e.target.envs)).toEqual([{ "/aw2": "canary" }, { "/aw2": "canary" }]);
    const elsewhere = await credential("pinboard:operator", { hostnames: ["h2.example"] });
    expect(
      (await readTrail(aware, elsewhere, "?limit=500")).entries.filter((e) => e.target.sessionId === sessionId),
    ).toEqual([]);
  });
});
