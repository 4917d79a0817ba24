import { describe, expect, it } from "vitest";
import { queueWindDown } from "../../src/registry/control-queue.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { until } from "../support/local-worker.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * Leases that only have to run out are short: the tests wait for Redis's clock to pass a record's
 * expiry (polled, never slept), so a loaded machine only makes them wait longer. Leases that must
 * NOT run out while a test drives heartbeats are long (STEADY_LEASE, on a second node with its
 * own prefix), so a stalled test process has seconds to spare.
 */
const LEASE = 1000;
const STEADY_LEASE = 3000;
let t: TestRedis, pb: TestPinboard, aware: TestPinboard, steady: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture(
  { PINBOARD_LEASE_TTL_MS: String(LEASE) },
  (f) =>
    ({
      t,
      pb,
      pinboards: { aware, steady },
      worker,
      token,
    } = f),
  {
    pinboards: {
      aware: { PINBOARD_LEASE_TTL_MS: String(LEASE), PINBOARD_PREFIX: "aware:", PINBOARD_HOSTNAME_AWARE: "1" },
      steady: { PINBOARD_LEASE_TTL_MS: String(STEADY_LEASE), PINBOARD_PREFIX: "steady:" },
    },
  },
);

const hbOn = (node: TestPinboard, sessionId: string, extra: Record<string, unknown> = {}) =>
  node.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId, extra) });
const hb = (sessionId: string, extra: Record<string, unknown> = {}) => hbOn(pb, sessionId, extra);

/** The stored worker record's expiry (Redis-clock ms), or null once the record is gone. */
async function expiryOf(sessionId: string, prefix = "pinboard:"): Promise<number | null> {
  const raw = await t.redis.hget(`${prefix}{global}:sessions`, sessionId);
  return raw === null ? null : (JSON.parse(raw) as { expiry: number }).expiry;
}

/** Waits until Redis's clock (the one liveness is judged by) has passed `ms`. */
async function redisClockPast(ms: number): Promise<void> {
  await until(async () => (await t.redis.timeMs()) > ms, 30_000, 25);
}

/** Runs `call` and returns its result with Redis's clock read just before and just after it. */
async function bracketed<T>(call: () => Promise<T>): Promise<{ value: T; before: number; after: number }> {
  const before = await t.redis.timeMs();
  const value = await call();
  const after = await t.redis.timeMs();
  return { value, before, after };
}

/** Remaining whole seconds from `nowMs` to `deadlineMs`, as the registry reports them. */
// A wind-down's seconds are rounded down: the worker must wind down no later than Pinboard frees the row.
const windDownSecondsLeft = (deadlineMs: number, nowMs: number) => Math.max(0, Math.floor((deadlineMs - nowMs) / 1000));
// A timed drain's, rounded up.
const secondsLeft = (deadlineMs: number, nowMs: number) => Math.max(0, Math.ceil((deadlineMs - nowMs) / 1000));

describe("leases", () => {
  it("a session is dead once expiry ≤ now and pruned by the next register once expiry + lease < now", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    expect(a.expiresInMs).toBe(LEASE);
    const expiry = (await expiryOf(a.sessionId))!;
    expect(expiry).toBeGreaterThan(0);
    await redisClockPast(expiry);
    const dead = await hb(a.sessionId);
    expect(dead.status).toBe(409);
    expect(await dead.json()).toEqual({ error: "unknown session", reregister: true });
    // Dead but not yet pruned: the record is still there, as it was.
    expect(await expiryOf(a.sessionId)).toBe(expiry);

    await redisClockPast(expiry + LEASE);
    await registerOk(pb, token, registerBody(worker));
    expect(await t.redis.hget("pinboard:{global}:sessions", a.sessionId)).toBeNull();
    for (let b = 0; b < 16; b++) expect(await t.redis.hget(`pinboard:{${b}}:workers`, a.sessionId)).toBeNull();
  });

  it("heartbeats keep a session alive past its first lease", async () => {
    // On the long-lease node: a heartbeat every quarter lease leaves 2 s for a stalled test.
    const a = await registerOk(steady, token, registerBody(worker));
    expect(a.expiresInMs).toBe(STEADY_LEASE);
    const first = (await expiryOf(a.sessionId, "steady:"))!;
    let previous = first;
    let beats = 0;
    // Until the Redis clock is past the first lease's end, and one heartbeat more after that.
    for (let past = false; !past; ) {
      past = (await t.redis.timeMs()) > first;
      if (!past) await new Promise((r) => setTimeout(r, STEADY_LEASE / 4));
      const { value: res, before, after } = await bracketed(() => hbOn(steady, a.sessionId));
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ expiresInMs: STEADY_LEASE, draining: false });
      beats++;
      // Each heartbeat renews the lease to one lease from the moment it ran.
      const renewed = (await expiryOf(a.sessionId, "steady:"))!;
      expect(renewed).toBeGreaterThanOrEqual(Math.max(previous, before + STEADY_LEASE));
      expect(renewed).toBeLessThanOrEqual(after + STEADY_LEASE);
      previous = renewed;
    }
    expect(beats).toBeGreaterThanOrEqual(4);
  });

  it("prunes bindings without a live worker at register, freeing the hostname for another env", async () => {
    const first = await registerOk(
      aware,
      token,
      registerBody(worker, { hostname: "h.example", env: "blue", epoch: 9 }),
    );
    expect(first.sessionId).toBeTruthy();
    await redisClockPast((await expiryOf(first.sessionId, "aware:"))!);
    // The blue worker is dead: green may bind the hostname at a lower epoch.
    const res = await aware.call("POST", "/registry/register", {
      token,
      body: registerBody(worker, { hostname: "h.example", env: "green", epoch: 1 }),
    });
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
    // On the long-lease node: the session outlives the second's wait below by 2 s.
    const a = await registerOk(steady, token, registerBody(worker));
    const hb = (sessionId: string, extra: Record<string, unknown> = {}) => hbOn(steady, sessionId, extra);
    const redisNow = await t.redis.timeMs();
    const deadlineAt = redisNow + 30_000;
    const msgId = await queueWindDown(steady.deps, a.sessionId, "/threads", "doc-1", deadlineAt);
    const revoke = await queueWindDown(steady.deps, a.sessionId, "/threads", "doc-2", null);
    type Delivered = { messages?: Array<{ deadline: number | null }> };
    /** The deadline a peek between `before` and `after` (Redis clock) reports: 30 s less the time gone, rounded down. */
    const expectDeadline = (deadline: number | null | undefined, before: number, after: number) => {
      expect(deadline).toBeGreaterThanOrEqual(windDownSecondsLeft(deadlineAt, after));
      expect(deadline).toBeLessThanOrEqual(windDownSecondsLeft(deadlineAt, before));
    };

    const peek1 = await bracketed(async () => (await (await hb(a.sessionId)).json()) as Delivered);
    const first = peek1.value.messages?.[0]?.deadline;
    expectDeadline(first, peek1.before, peek1.after);
    expect(peek1.value.messages).toEqual([
      { msgId, type: "wind_down", ns: "/threads", id: "doc-1", deadline: first },
      { msgId: revoke, type: "wind_down", ns: "/threads", id: "doc-2", deadline: null },
    ]);
    // A full second later (Redis clock) the same message reports a deadline at least a second shorter.
    await redisClockPast(peek1.after + 1000);
    const peek2 = await bracketed(async () => (await (await hb(a.sessionId, { acks: [revoke] })).json()) as Delivered);
    const second = peek2.value.messages?.[0]?.deadline;
    expectDeadline(second, peek2.before, peek2.after);
    expect(second).toBeLessThanOrEqual(first! - 1);
    expect(peek2.value.messages).toEqual([{ msgId, type: "wind_down", ns: "/threads", id: "doc-1", deadline: second }]);
    const answer = (await (await hb(a.sessionId, { acks: [Number(msgId)] })).json()) as Delivered;
    expect(answer.messages).toBeUndefined();
  });

  it("the queue expires two lease TTLs after its last write or peek", async () => {
    const a = await registerOk(pb, token, registerBody(worker));
    const {
      value: ttl,
      before,
      after,
    } = await bracketed(async () => {
      await queueWindDown(pb.deps, a.sessionId, "/threads", "doc-3", null);
      return t.redis.client.pttl(`pinboard:{global}:queue:${a.sessionId}`);
    });
    // Set to two leases by the write, less what passed between the write and the read.
    expect(ttl).toBeGreaterThanOrEqual(2 * LEASE - (after - before) - 1);
    expect(ttl).toBeLessThanOrEqual(2 * LEASE);
  });
});

describe("drains reach the heartbeat", () => {
  it("a cordon sets draining; a timed drain bounds the lease and reports drainDeadline", async () => {
    // On the long-lease node: the timed drain below ends the lease 1.5 s after it is set, well
    // inside the 3 s lease a heartbeat grants, and the heartbeat has those 1.5 s to run.
    const clientId = "drained-client";
    const drainKey = `steady:{global}:drain:${clientId}`;
    const a = await registerOk(steady, token, registerBody(worker, { clientId }));
    await t.redis.client.set(drainKey, "cordon");
    expect(await (await hbOn(steady, a.sessionId)).json()).toEqual({ expiresInMs: STEADY_LEASE, draining: true });

    const deadline = (await t.redis.timeMs()) + 10_000;
    await t.redis.client.set(drainKey, String(deadline));
    const timed = await bracketed(
      async () => (await (await hbOn(steady, a.sessionId)).json()) as { drainDeadline: number },
    );
    const left = timed.value.drainDeadline;
    expect(left).toBeGreaterThanOrEqual(secondsLeft(deadline, timed.after));
    expect(left).toBeLessThanOrEqual(secondsLeft(deadline, timed.before));
    expect(timed.value).toEqual({ expiresInMs: STEADY_LEASE, draining: true, drainDeadline: left });

    const soon = (await t.redis.timeMs()) + STEADY_LEASE / 2;
    await t.redis.client.set(drainKey, String(soon));
    expect((await hbOn(steady, a.sessionId)).status).toBe(200);
    // The heartbeat renewed the lease only up to the drain deadline, not a lease ahead.
    expect(await expiryOf(a.sessionId, "steady:")).toBe(soon);
    await redisClockPast(soon);
    // Past the drain deadline the lease is over: the worker is dead.
    const dead = await hbOn(steady, a.sessionId);
    expect(dead.status).toBe(409);
    expect(await dead.json()).toEqual({ error: "unknown session", reregister: true });
  });

  it("the worker's own draining flag is reported and stored", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { draining: true }));
    expect(a.draining).toBe(true);
    expect(await (await hb(a.sessionId, { draining: false })).json()).toEqual({ expiresInMs: LEASE, draining: false });
  });
});
