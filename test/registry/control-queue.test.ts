import { describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { until } from "../support/local-worker.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { putRow } from "../support/rows.ts";

/**
 * "messages re-deliver on every ack until acks names their msgIds … The control queue expires two
 * lease TTLs after its last write or peek."
 *
 * Messages are queued the way an operator queues them (POST /registry/wind_down on a placement
 * the worker owns) and peeked by real heartbeats. The TTL is read with PTTL. Each check that a
 * write or a peek extended the TTL compares it with the TTL read just before: a TTL only ever
 * runs down unless something set it again.
 */

const LEASE = 5000;
/** How far a TTL runs down before the write or peek that must set it again (room for a stalled machine). */
const RUN_DOWN_MS = 2500;
const keys = new Keys("pinboard:", 16);

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
let operator: string;
useRegistryFixture(
  { PINBOARD_LEASE_TTL_MS: String(LEASE) },
  (f) =>
    ({
      t,
      pb,
      worker,
      token,
      credentials: { operator },
    } = f),
  {
    credentials: { operator: ["pinboard:operator"] },
  },
);

interface Message {
  msgId: string;
  type: "wind_down";
  ns: string;
  id: string;
  deadline: number | null;
}

const pttl = (sessionId: string) => t.redis.client.pttl(keys.queue(sessionId));

/** Queues a wind_down for a placement of `sessionId` through the operator route. */
async function windDown(sessionId: string, id: string, deadline: number | null): Promise<void> {
  await putRow(t, "/threads", id, { sessionId, epoch: "1000" });
  const res = await pb.call("POST", "/registry/wind_down", {
    token: operator,
    body: { namespace: "/threads", id, deadline },
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ queued: true });
}

async function heartbeat(
  sessionId: string,
  acks?: string[],
): Promise<{ expiresInMs: number; draining: boolean; messages?: Message[] }> {
  const res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(worker, sessionId, acks ? { acks: acks.map(Number) } : {}),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { expiresInMs: number; draining: boolean; messages?: Message[] };
}

/** Waits until the queue's TTL has run down to at most `ms`; returns it. */
async function runDownTo(sessionId: string, ms: number): Promise<number> {
  return until(async () => {
    const left = await pttl(sessionId);
    return left > 0 && left <= ms ? left : null;
  }, 4 * LEASE);
}

describe("the control queue's expiry", () => {
  it("a write sets it to two leases, a later write sets it again", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    expect(await t.redis.client.exists(keys.queue(sessionId))).toBe(0);
    await windDown(sessionId, "w-write-1", null);
    const first = await pttl(sessionId);
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThanOrEqual(2 * LEASE);

    const ranDown = await runDownTo(sessionId, 2 * LEASE - RUN_DOWN_MS);
    await windDown(sessionId, "w-write-2", null);
    const rewritten = await pttl(sessionId);
    expect(rewritten).toBeGreaterThan(ranDown);
    expect(rewritten).toBeLessThanOrEqual(2 * LEASE);
  });

  it("a heartbeat that peeks messages sets it to two leases again, and so does one that acks only some", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await windDown(sessionId, "w-peek-1", null);
    await windDown(sessionId, "w-peek-2", 60);

    let ranDown = await runDownTo(sessionId, 2 * LEASE - RUN_DOWN_MS);
    const peeked = await heartbeat(sessionId);
    expect(peeked).toEqual({
      expiresInMs: LEASE,
      draining: false,
      messages: [
        { msgId: expect.any(String), type: "wind_down", ns: "/threads", id: "w-peek-1", deadline: null },
        { msgId: expect.any(String), type: "wind_down", ns: "/threads", id: "w-peek-2", deadline: expect.any(Number) },
      ],
    });
    let extended = await pttl(sessionId);
    expect(extended).toBeGreaterThan(ranDown);
    expect(extended).toBeLessThanOrEqual(2 * LEASE);

    ranDown = await runDownTo(sessionId, 2 * LEASE - RUN_DOWN_MS);
    const [first, second] = peeked.messages!;
    expect(await heartbeat(sessionId, [first!.msgId])).toEqual({
      expiresInMs: LEASE,
      draining: false,
      messages: [{ ...second!, deadline: expect.any(Number) }],
    });
    extended = await pttl(sessionId);
    expect(extended).toBeGreaterThan(ranDown);
    expect(extended).toBeLessThanOrEqual(2 * LEASE);

    // The last ack empties the queue: it is gone.
    expect(await heartbeat(sessionId, [second!.msgId])).toEqual({ expiresInMs: LEASE, draining: false });
    expect(await t.redis.client.exists(keys.queue(sessionId))).toBe(0);
  });

  it("without another write or peek, the queue is gone two leases after the last peek, and not before", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await windDown(sessionId, "w-expire", null);
    await runDownTo(sessionId, 2 * LEASE - RUN_DOWN_MS);
    const peekedFrom = Date.now();
    expect((await heartbeat(sessionId)).messages).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/threads", id: "w-expire", deadline: null },
    ]);
    expect(await pttl(sessionId)).toBeGreaterThan(0);

    await until(async () => (await t.redis.client.exists(keys.queue(sessionId))) === 0, 2 * LEASE + 10_000, 25);
    // The peek's PEXPIRE ran after peekedFrom: the key cannot have expired earlier than this.
    expect(Date.now()).toBeGreaterThanOrEqual(peekedFrom + 2 * LEASE - 20);
  });
});
