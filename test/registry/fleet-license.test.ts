import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../support/local-worker.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let t: TestRedis;
const nodes: TestPinboard[] = [];
/**
 * Long enough that a node renewing every LEASE / 6 keeps its license through a stalled test
 * process (2.5 s to spare), and that the second node starts well inside the first one's lease.
 */
const LEASE = 3000;
const LICENSE = "pinboard:{global}:license";

beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  await t.stop();
});

async function node(env: Record<string, string>): Promise<TestPinboard> {
  const pb = await startTestPinboard(t, { PINBOARD_LEASE_TTL_MS: String(LEASE), ...env });
  nodes.push(pb);
  return pb;
}

async function notServing(pb: TestPinboard): Promise<void> {
  const token = await credential("pinboard:worker");
  for (const path of [
    "/registry/register",
    "/registry/heartbeat",
    "/registry/release",
    "/registry/tag",
    "/registry/deregister",
    "/registry/unknown",
  ]) {
    const res = await pb.call("POST", path, { token, body: {} });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("1");
    expect(await res.json()).toEqual({ error: "not the serving fleet" });
  }
  // The data plane refuses the same way, and the refusal is counted on /registry/health, which
  // still answers while the node is not serving.
  const operator = await credential("pinboard:operator");
  const counted = async () =>
    (
      (await (await pb.call("GET", "/registry/health", { token: operator })).json()) as {
        resolutions: Record<string, number>;
      }
    ).resolutions["not-serving"] ?? 0;
  const before = await counted();
  const refused = await pb.call("GET", "/echo/doc-1");
  expect(refused.status).toBe(503);
  expect(refused.headers.get("retry-after")).toBe("1");
  expect(await refused.json()).toEqual({ error: "not the serving fleet" });
  expect(await counted()).toBe(before + 1);
  const ready = await pb.call("GET", "/readyz");
  expect(ready.status).toBe(503);
  expect(await ready.text()).toBe("");
  expect((await pb.call("GET", "/healthz")).status).toBe(200);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("fleet license and membership", () => {
  it("two nodes with different shard counts against one Redis never both serve", async () => {
    const a = await node({ PINBOARD_SHARDS: "16" });
    const b = await node({ PINBOARD_SHARDS: "8" });
    expect(a.deps.fleet.peek().serving).toBe(true);
    expect(b.deps.fleet.peek().serving).toBe(false);
    expect((await a.call("GET", "/readyz")).status).toBe(200);
    await notServing(b);
    expect(JSON.parse((await t.redis.get("pinboard:{global}:license"))!)).toEqual({
      schema: 1,
      shards: 16,
      hostnameAware: false,
      epoch: 0,
    });
    const ttl = await t.redis.client.pttl(LICENSE);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(LEASE);

    // While a keeps renewing, b stays out, lease after lease: b tries just before each of a's
    // renewals (the license is then at its oldest), until more than a whole lease has passed.
    const started = Date.now();
    let lastRenewal = 0;
    let tries = 0;
    while (Date.now() - started <= LEASE + LEASE / 6) {
      await sleep(LEASE / 6);
      expect((await b.deps.fleet.refresh()).serving).toBe(false);
      tries++;
      lastRenewal = Date.now();
      expect((await a.deps.fleet.refresh()).serving).toBe(true);
    }
    expect(tries).toBeGreaterThanOrEqual(7);
    expect(JSON.parse((await t.redis.get(LICENSE))!)).toEqual({
      schema: 1,
      shards: 16,
      hostnameAware: false,
      epoch: 0,
    });

    // Once a is gone (no renewals for a lease), its license and its membership run out: not
    // before a full lease from its last renewal. Then b takes over at its next try.
    const members = Object.values(await t.redis.hgetall("pinboard:{global}:members")).map(
      (m) => JSON.parse(m) as { expiry: number },
    );
    expect(members).toHaveLength(1);
    await until(
      async () => (await t.redis.get(LICENSE)) === null && (await t.redis.timeMs()) >= members[0]!.expiry,
      30_000,
      25,
    );
    expect(Date.now() - lastRenewal).toBeGreaterThanOrEqual(LEASE - 10);
    expect((await b.deps.fleet.refresh()).serving).toBe(true);
    expect((await a.deps.fleet.refresh()).serving).toBe(false);
    expect(JSON.parse((await t.redis.get(LICENSE))!)).toEqual({ schema: 1, shards: 8, hostnameAware: false, epoch: 0 });
    await t.flush();
  });

  it("nodes with the same config share the license", async () => {
    const a = await node({});
    const b = await node({});
    expect(a.deps.fleet.peek().serving).toBe(true);
    expect(b.deps.fleet.peek().serving).toBe(true);
    expect(Object.keys(await t.redis.hgetall("pinboard:{global}:members"))).toHaveLength(2);
    await t.flush();
  });

  it("a higher fleet epoch overwrites the license; the lower-epoch node stops serving", async () => {
    const old = await node({ PINBOARD_SHARDS: "16" });
    expect(old.deps.fleet.peek().serving).toBe(true);
    const next = await node({ PINBOARD_SHARDS: "32", PINBOARD_FLEET_EPOCH: "1" });
    expect(next.deps.fleet.peek().serving).toBe(true);
    expect(JSON.parse((await t.redis.get("pinboard:{global}:license"))!)).toEqual({
      schema: 1,
      shards: 32,
      hostnameAware: false,
      epoch: 1,
    });
    expect((await old.deps.fleet.refresh()).serving).toBe(false);
    await notServing(old);
  });
});
