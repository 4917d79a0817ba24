import { beforeEach, describe, expect, it } from "vitest";
import { instanceMember } from "../../src/contract/durable-index.ts";
import { Keys } from "../../src/redis/keys.ts";
import { meteredPort } from "../../src/redis/request-meter.ts";
import { SubrequestBudget } from "../../src/sweeper/subrequest-budget.ts";
import { sweepWakes, WAKE_PARK_AFTER, WAKE_ROUND_COST } from "../../src/sweeper/wakes.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * The durability sweep against a worker that answers _wake as scripted. Worker contract: 200
 * clears the overwritten marker at or below the woken epoch; 202 ("still activating") checks
 * again after the wake timeout, keeping the marker; any other answer backs off, and the fifth
 * failure in a row parks the entry. An id the durability index does not know is not durable:
 * its marker is dropped without a call.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = new Keys("pinboard:", 16);
const NS = "/wakes";
let n = 0;

/** A durable id of NS whose overwritten marker awaits a wake; its bucket and marker field. */
async function awaitingWake(durable = true): Promise<{ id: string; bucket: number; field: string }> {
  const id = `w-${++n}`;
  const bucket = await keys.bucketOf(id);
  const field = `*\n${NS}\n${id}`;
  await t.redis.client.hset(keys.overwritten(bucket), field, "1");
  if (durable) await t.redis.client.hset(pb.deps.durable.keys.instances, instanceMember(NS, id), "");
  return { id, bucket, field };
}

const sweep = () => sweepWakes({ ...pb.deps, budget: new SubrequestBudget(Infinity) }, async () => true);
const wakeCalls = (id: string) => worker.seen.filter((r) => r.method === "POST" && r.url === `${NS}/${id}/_wake`);

beforeEach(async () => {
  await registerOk(pb, token, registerBody(worker, { namespaces: [NS] }));
  await endColdStart(t, keys);
  for (let b = 0; b < 16; b++) await t.redis.client.del(keys.overwritten(b), keys.wakes(b));
});

describe("sweepWakes against the worker's answers", () => {
  it("200: the instance is woken and its marker cleared", async () => {
    worker.instanceCalls = { status: 200, body: {} };
    const { id, bucket, field } = await awaitingWake();
    expect(await sweep()).toEqual({ woken: 1, pending: 0, failed: 0, parked: 0, dropped: 0 });
    expect(wakeCalls(id)).toHaveLength(1);
    expect(await t.redis.client.hget(keys.overwritten(bucket), field)).toBeNull();
  });

  it("200 for an older epoch than the marker's: the marker of a newer overwrite stays", async () => {
    worker.instanceCalls = { status: 200, body: {} };
    const { bucket, field } = await awaitingWake();
    // An overwrite newer than any epoch this wake can serve.
    await t.redis.client.hset(keys.overwritten(bucket), field, "9000000000000000");
    expect(await sweep()).toEqual({ woken: 1, pending: 0, failed: 0, parked: 0, dropped: 0 });
    expect(await t.redis.client.hget(keys.overwritten(bucket), field)).toBe("9000000000000000");
  });

  it("202 still activating: pending, the marker kept and checked again only after the wake timeout", async () => {
    worker.instanceCalls = { status: 202, body: { activating: true } };
    const { id, bucket, field } = await awaitingWake();
    expect(await sweep()).toEqual({ woken: 0, pending: 1, failed: 0, parked: 0, dropped: 0 });
    expect(await t.redis.client.hget(keys.overwritten(bucket), field)).toBe("1");
    // The next pass, within the wake timeout, leaves it alone.
    expect(await sweep()).toEqual({ woken: 0, pending: 0, failed: 0, parked: 0, dropped: 0 });
    expect(wakeCalls(id)).toHaveLength(1);
  });

  it("repeated failure: backs off, and the fifth failure parks the entry, marker kept", async () => {
    worker.instanceCalls = { status: 500, body: { detail: "boom" } };
    const { id, bucket, field } = await awaitingWake();
    const reports = [];
    for (let i = 0; i < WAKE_PARK_AFTER; i++) {
      reports.push(await sweep());
      // Skip the back-off: the entry is due again at once.
      const state = (await t.redis.client.hget(keys.wakes(bucket), field))!.split("\n");
      if (state[2] !== "1") await t.redis.client.hset(keys.wakes(bucket), field, `${state[0]}\n0\n0`);
    }
    expect(reports.slice(0, -1)).toEqual(
      Array(WAKE_PARK_AFTER - 1).fill({ woken: 0, pending: 0, failed: 1, parked: 0, dropped: 0 }),
    );
    expect(reports.at(-1)).toEqual({ woken: 0, pending: 0, failed: 1, parked: 1, dropped: 0 });
    expect(wakeCalls(id)).toHaveLength(WAKE_PARK_AFTER);
    // Parked: no further call, the marker stays for operators.
    expect(await sweep()).toEqual({ woken: 0, pending: 0, failed: 0, parked: 0, dropped: 0 });
    expect(wakeCalls(id)).toHaveLength(WAKE_PARK_AFTER);
    expect(await t.redis.client.hget(keys.overwritten(bucket), field)).toBe("1");
  });

  it("not durable: the marker is dropped and the worker never called", async () => {
    worker.instanceCalls = { status: 200, body: {} };
    const { id, bucket, field } = await awaitingWake(false);
    expect(await sweep()).toEqual({ woken: 0, pending: 0, failed: 0, parked: 0, dropped: 1 });
    expect(wakeCalls(id)).toHaveLength(0);
    expect(await t.redis.client.hget(keys.overwritten(bucket), field)).toBeNull();
  });
});

describe("sweepWakes in pages", () => {
  it("reads a large overwritten hash a page at a time, each pass resuming at the cursor the last one stored", async () => {
    // 600 markers in one bucket (a hashtable-encoded hash, past the listpack's 128 or 512 fields:
    // HSCAN pages it), none durable; two in three parked, so a scan that started over each pass would read the same
    // parked ids again and again.
    const bucket = 3;
    const fields: string[] = [];
    for (let i = 0; fields.length < 600; i++) {
      const id = `paged-${i}`;
      if (keys.bucketOf(id) === bucket) fields.push(`*\n${NS}\n${id}`);
    }
    await t.redis.client.hset(keys.overwritten(bucket), Object.fromEntries(fields.map((f) => [f, "1"])));
    expect(await t.redis.client.object("ENCODING", keys.overwritten(bucket))).toBe("hashtable");
    const parked = fields.filter((_, i) => i % 3 !== 0);
    await t.redis.client.hset(keys.wakes(bucket), Object.fromEntries(parked.map((f) => [f, "5\n0\n1\nboom"])));
    const cursor = () => t.redis.client.get(keys.wakeCursor(bucket));

    // A budget of one round per pass (one page of every bucket, the lookups, the bookkeeping),
    // drawn by every Redis call as in a pass (sweep.ts).
    const pass = () => {
      const budget = new SubrequestBudget(WAKE_ROUND_COST);
      const redis = meteredPort(pb.deps.redis, budget);
      const durable = { ...pb.deps.durable, redis: meteredPort(pb.deps.durable.redis, budget) };
      return sweepWakes({ ...pb.deps, redis, durable, budget }, async () => true);
    };
    let dropped = 0;
    let passes = 0;
    let resumed = false;
    while ((await t.redis.client.hlen(keys.overwritten(bucket))) > parked.length) {
      if (++passes > 40) throw new Error(`not done after ${passes} passes`);
      dropped += (await pass()).dropped;
      resumed ||= (await cursor()) !== null;
    }
    expect(dropped).toBe(fields.length - parked.length);
    expect(passes).toBeGreaterThan(1);
    expect(resumed).toBe(true);
  });
});
