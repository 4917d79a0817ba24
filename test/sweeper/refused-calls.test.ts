import { describe, expect, it } from "vitest";
import { instanceMember } from "../../src/contract/durable-index.ts";
import { Keys } from "../../src/redis/keys.ts";
import { sweepAlarms } from "../../src/sweeper/due-alarms.ts";
import { SubrequestBudget } from "../../src/sweeper/subrequest-budget.ts";
import { sweepWakes } from "../../src/sweeper/wakes.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow } from "../support/rows.ts";

/**
 * A worker that refuses the sweeper's _wake or _alarm in-band (503 + Pinned-Refusal:
 * lease-unhealthy: it drains, its lease is unhealthy, or that epoch ended there) gets what the
 * data plane gives such a refusal: the placement is released, so the next pass places the
 * instance anew rather than calling the same worker at the same epoch again. Any other 503 keeps
 * the placement (a failure, retried as before).
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = new Keys("pinboard:", 16);
const NS = "/refused";
let n = 0;

const REFUSAL = {
  status: 503,
  body: { detail: "placement epoch ended here" },
  headers: { "Retry-After": "1", "Pinned-Refusal": "lease-unhealthy" },
};
const PLAIN_503 = { status: 503, body: { detail: "busy" } };

async function durableId(): Promise<string> {
  const id = `r-${++n}`;
  await t.redis.client.hset(pb.deps.durable.keys.instances, instanceMember(NS, id), "");
  return id;
}

async function awaitingWake(): Promise<string> {
  const id = await durableId();
  await t.redis.client.hset(keys.overwritten(await keys.bucketOf(id)), `*\n${NS}\n${id}`, "1");
  return id;
}

async function dueAlarm(): Promise<string> {
  const id = await durableId();
  await t.redis.client.zadd(
    pb.deps.durable.keys.alarms,
    String((await t.redis.timeMs()) - 1000),
    instanceMember(NS, id),
  );
  return id;
}

const deps = () => ({ ...pb.deps, budget: new SubrequestBudget(Infinity) });
const wakePass = () => sweepWakes(deps(), async () => true);
const alarmPass = () => sweepAlarms(deps(), async () => true, 0);

/** The epoch the last call of `action` on `id` carried. */
function lastEpoch(id: string, action: "_wake" | "_alarm"): string {
  const call = worker.seen.filter((r) => r.url === `${NS}/${id}/${action}`).at(-1);
  return String(call?.headers["pinboard-epoch"]);
}

async function setUp(): Promise<void> {
  await registerOk(pb, token, registerBody(worker, { namespaces: [NS] }));
  await endColdStart(t, keys);
  await t.redis.client.del(pb.deps.durable.keys.alarms);
  for (let b = 0; b < 16; b++) await t.redis.client.del(keys.overwritten(b), keys.wakes(b));
}

describe("the sweeper's calls refused in-band", () => {
  it("_wake: the placement it made is released", async () => {
    await setUp();
    worker.instanceCalls = REFUSAL;
    const id = await awaitingWake();
    expect(await wakePass()).toMatchObject({ woken: 0, failed: 1 });
    expect(worker.seen.filter((r) => r.url === `${NS}/${id}/_wake`)).toHaveLength(1);
    expect(await getRow(t, NS, id)).toBeNull();
  });

  it("_wake: a 503 without Pinned-Refusal keeps the placement", async () => {
    await setUp();
    worker.instanceCalls = PLAIN_503;
    const id = await awaitingWake();
    expect(await wakePass()).toMatchObject({ woken: 0, failed: 1 });
    expect(await getRow(t, NS, id)).toMatchObject({ epoch: lastEpoch(id, "_wake") });
  });

  it("_alarm: the placement is released, and the next pass places the instance at a newer epoch", async () => {
    await setUp();
    worker.instanceCalls = REFUSAL;
    const id = await dueAlarm();
    expect(await alarmPass()).toEqual({ fired: 0, running: 0, stale: 0, failed: 1 });
    expect(await getRow(t, NS, id)).toBeNull();

    worker.instanceCalls = { status: 200, body: { fired: true } };
    const before = worker.seen.filter((r) => r.url === `${NS}/${id}/_alarm`);
    expect(await alarmPass()).toEqual({ fired: 1, running: 0, stale: 0, failed: 0 });
    const calls = worker.seen.filter((r) => r.url === `${NS}/${id}/_alarm`);
    expect(calls).toHaveLength(before.length + 1);
    const epochs = calls.map((r) => BigInt(String(r.headers["pinboard-epoch"])));
    expect(epochs[1]).toBeGreaterThan(epochs[0]!);
    expect(await getRow(t, NS, id)).toMatchObject({ epoch: String(epochs[1]) });
  });

  it("_alarm: a 503 without Pinned-Refusal keeps the placement", async () => {
    await setUp();
    worker.instanceCalls = PLAIN_503;
    const id = await dueAlarm();
    expect(await alarmPass()).toEqual({ fired: 0, running: 0, stale: 0, failed: 1 });
    expect(await getRow(t, NS, id)).toMatchObject({ epoch: lastEpoch(id, "_alarm") });
  });
});
