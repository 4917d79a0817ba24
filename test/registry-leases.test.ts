import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueWindDown } from "../src/registry/control-queue.ts";
import { startChallengeServer, type ChallengeServer } from "./support/challenge-server.ts";
import { credential, startTestPinboard, type TestPinboard } from "./support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "./support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "./support/registration.ts";

const LEASE = 1000;
let t: TestRedis;
let pb: TestPinboard;
let aware: TestPinboard;
let worker: ChallengeServer;
let token: string;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startTestPinboard(t, { PINBOARD_LEASE_TTL_MS: String(LEASE) });
  aware = await startTestPinboard(t, { PINBOARD_LEASE_TTL_MS: String(LEASE), PINBOARD_PREFIX: "aware:", PINBOARD_HOSTNAME_AWARE: "1" });
  worker = await startChallengeServer();
  token = await credential("pinboard:worker");
});
afterAll(async () => {
  await worker.close();
  await pb.close();
  await aware.close();
  await t.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const hb = (sessionId: string, extra: Record<string, unknown> = {}) =>
  pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId, extra) });

describe("leases", () => {
  it("a session is dead once expiry ≤ now and pruned by the next register once expiry + lease < now", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    expect(a.expiresInMs).toBe(LEASE);
    await sleep(LEASE + 100);
    const dead = await hb(a.sessionId);
    expect(dead.status).toBe(409);
    expect(await dead.json()).toEqual({ error: "unknown session", reregister: true });
    // Dead but not yet pruned: the record is still there.
    expect(await t.redis.hget("pinboard:{global}:sessions", a.sessionId)).not.toBeNull();

    await sleep(LEASE + 100);
    await registerOk(pb, token, registerBody(worker));
    expect(await t.redis.hget("pinboard:{global}:sessions", a.sessionId)).toBeNull();
    for (let b = 0; b < 16; b++) expect(await t.redis.hget(`pinboard:{${b}}:workers`, a.sessionId)).toBeNull();
  });

  it("heartbeats keep a session alive past its first lease", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    for (let i = 0; i < 4; i++) {
      await sleep(LEASE / 3);
      expect((await hb(a.sessionId)).status).toBe(200);
    }
  });

  it("prunes bindings without a live worker at register, freeing the hostname for another env", async () => {
    const first = await registerOk(aware, token, registerBody(worker, { hostname: "h.example", env: "blue", epoch: 9 }));
    expect(first.sessionId).toBeTruthy();
    await sleep(LEASE + 100);
    // The blue worker is dead: green may bind the hostname at a lower epoch.
    const res = await aware.call("POST", "/registry/register", { token, body: registerBody(worker, { hostname: "h.example", env: "green", epoch: 1 }) });
    expect(res.status).toBe(200);
    expect(await t.redis.hget("aware:{global}:bindings:hostnames", "h.example/threads")).toBe("green\n1");
  });

  it("two concurrent registers both succeed with distinct sessions in every bucket", async () => {
    const [a, b] = await Promise.all([
      registerOk(pb, token, registerBody(worker)),
      registerOk(pb, token, registerBody(worker)),
    ]);
    expect(a.sessionId).not.toBe(b.sessionId);
    for (let bucket = 0; bucket < 16; bucket++) {
      const members = await t.redis.client.hkeys(`pinboard:{${bucket}}:nsw:/threads`);
      expect(members).toEqual(expect.arrayContaining([a.sessionId, b.sessionId]));
    }
  });

  it("concurrent registers of one client leave exactly one session mirrored", async () => {
    const results = await Promise.all(
      Array.from({ length: 4 }, () => registerOk(pb, token, registerBody(worker, { clientId: "racer" }))),
    );
    const current = (await t.redis.hget("pinboard:{global}:clients", "racer"))!.split("\n")[1];
    expect(results.map((r) => r.sessionId)).toContain(current);
    for (let bucket = 0; bucket < 16; bucket++) {
      const mirrored = Object.keys(await t.redis.hgetall(`pinboard:{${bucket}}:workers`)).filter((sid) =>
        results.some((r) => r.sessionId === sid),
      );
      expect(mirrored).toEqual([current]);
    }
  });
});

describe("control messages", () => {
  it("re-deliver on every heartbeat until acked, with the deadline relative at peek time", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    const redisNow = await t.redis.timeMs();
    const msgId = await queueWindDown(pb.deps, a.sessionId, "/threads", "doc-1", redisNow + 30_000);
    const revoke = await queueWindDown(pb.deps, a.sessionId, "/threads", "doc-2", null);

    let answer = (await (await hb(a.sessionId)).json()) as { messages?: unknown[] };
    expect(answer.messages).toEqual([
      { msgId, type: "wind_down", ns: "/threads", id: "doc-1", deadline: 30 },
      { msgId: revoke, type: "wind_down", ns: "/threads", id: "doc-2", deadline: null },
    ]);
    await sleep(300);
    answer = (await (await hb(a.sessionId, { acks: [revoke] })).json()) as { messages?: unknown[] };
    expect(answer.messages).toEqual([{ msgId, type: "wind_down", ns: "/threads", id: "doc-1", deadline: 30 }]);
    answer = (await (await hb(a.sessionId, { acks: [Number(msgId)] })).json()) as { messages?: unknown[] };
    expect(answer.messages).toBeUndefined();
  });

  it("the queue expires two lease TTLs after its last write or peek", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    await queueWindDown(pb.deps, a.sessionId, "/threads", "doc-3", null);
    const ttl = await t.redis.client.pttl(`pinboard:{global}:queue:${a.sessionId}`);
    expect(ttl).toBeGreaterThan(2 * LEASE - 200);
    expect(ttl).toBeLessThanOrEqual(2 * LEASE);
  });
});

describe("drains reach the heartbeat", () => {
  it("a cordon sets draining; a timed drain bounds the lease and reports drainDeadline", async () => {
    const clientId = "drained-client";
    const a = await registerOk(pb, token, registerBody(worker, { clientId }));
    await t.redis.client.set(`pinboard:{global}:drain:${clientId}`, "cordon");
    expect(await (await hb(a.sessionId)).json()).toEqual({ expiresInMs: LEASE, draining: true });

    const deadline = (await t.redis.timeMs()) + 10_000;
    await t.redis.client.set(`pinboard:{global}:drain:${clientId}`, String(deadline));
    expect(await (await hb(a.sessionId)).json()).toEqual({ expiresInMs: LEASE, draining: true, drainDeadline: 10 });

    await t.redis.client.set(`pinboard:{global}:drain:${clientId}`, String((await t.redis.timeMs()) + 200));
    expect((await hb(a.sessionId)).status).toBe(200);
    await sleep(300);
    // Past the drain deadline the lease is over: the worker is dead.
    expect((await hb(a.sessionId)).status).toBe(409);
  });

  it("the worker's own draining flag is reported and stored", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { draining: true }));
    expect(a.draining).toBe(true);
    expect(await (await hb(a.sessionId, { draining: false })).json()).toEqual({ expiresInMs: LEASE, draining: false });
  });
});
