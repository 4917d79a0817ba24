import { describe, expect, it } from "vitest";
import { instanceMember } from "../../src/contract/durable-index.ts";
import { Keys } from "../../src/redis/keys.ts";
import { runSweep } from "../../src/sweeper/sweep.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * "The fence survives worker death and re-notifies a replacement owner" — also when the
 * replacement is placed by the sweeper (a durability wake or a due alarm) rather than by a
 * client request: the sweeper takes the data plane's placement path, so the new owner's next
 * heartbeat carries the surviving wind_down.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = new Keys("pinboard:", 16);
const FENCE_MS = 600_000;

/** A live replacement worker for `ns` and an orphaned row of `id` whose wind-down fence outlived its dead owner. */
async function fencedOrphan(ns: string, id: string): Promise<{ sessionId: string; fence: string }> {
  const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: [ns] }));
  await endColdStart(t, keys);
  const fence = String((await t.redis.timeMs()) + FENCE_MS);
  await putRow(t, ns, id, { sessionId: "dead-owner", epoch: "5", expiry: fence });
  return { sessionId, fence };
}

/** The messages one heartbeat of the session delivers. */
async function messagesOf(sessionId: string): Promise<unknown[] | undefined> {
  const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages?: unknown[] }).messages;
}

async function expectRenotified(sessionId: string, ns: string, id: string, fence: string): Promise<void> {
  // Placed at the survivor, keeping the fence.
  const row = await getRow(t, ns, id);
  expect(row).toEqual({ sessionId, epoch: expect.stringMatching(/^\d+$/), expiry: fence, hostname: "", tag: "" });
  expect(BigInt(row!.epoch!)).toBeGreaterThan(5n);
  // … and the survivor is told: the wind_down rides its next heartbeat, deadline relative to now.
  const messages = await messagesOf(sessionId);
  expect(messages).toEqual([{ msgId: expect.any(String), type: "wind_down", ns, id, deadline: expect.any(Number) }]);
  const { deadline } = messages![0] as { deadline: number };
  expect(deadline).toBeGreaterThan(FENCE_MS / 1000 - 60);
  expect(deadline).toBeLessThanOrEqual(FENCE_MS / 1000);
}

describe("a placement made by the sweeper re-notifies a surviving wind-down fence", () => {
  it("durability wake: the replacement owner receives the wind_down", async () => {
    const { sessionId, fence } = await fencedOrphan("/swake", "fenced");
    await t.redis.client.hset(keys.overwritten(await keys.bucketOf("fenced")), "*\n/swake\nfenced", "5");
    await t.redis.client.hset(pb.deps.durable.keys.instances, instanceMember("/swake", "fenced"), "");

    const report = await runSweep(pb.deps);
    expect(report.ran).toBe(true);
    // The challenge server mounts no _wake: the wake itself fails, after the placement.
    expect(report.wakes).toMatchObject({ woken: 0, failed: 1 });
    expect(worker.seen.some((r) => r.method === "POST" && r.url === "/swake/fenced/_wake")).toBe(true);
    await expectRenotified(sessionId, "/swake", "fenced", fence);
  });

  it("due alarm: the replacement owner receives the wind_down", async () => {
    const { sessionId, fence } = await fencedOrphan("/salarm", "fenced");
    await t.redis.client.zadd(
      pb.deps.durable.keys.alarms,
      String((await t.redis.timeMs()) - 1000),
      instanceMember("/salarm", "fenced"),
    );

    const report = await runSweep(pb.deps);
    expect(report.ran).toBe(true);
    expect(report.alarms).toMatchObject({ fired: 0, failed: 1 });
    expect(worker.seen.some((r) => r.method === "POST" && r.url === "/salarm/fenced/_alarm")).toBe(true);
    await expectRenotified(sessionId, "/salarm", "fenced", fence);
  });
});
