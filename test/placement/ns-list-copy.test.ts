import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { copyPreviousNamespaceList, NS_LIST_COPY_REACH } from "../../src/placement/ns-list-copy.ts";
import { resolvePlacement } from "../../src/placement/resolver.ts";
import { Keys, SINGLE_ENV, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * Placement: "Heartbeat re-adds the worker to every namespace list in its bucket, and a bucket
 * missing a namespace list copies the previous bucket's." A bucket loses its keys with its Redis
 * node, to an eviction or to a hand edit; until then every resolve there answered 404 unknown
 * namespace until each worker had heartbeated again.
 */

const keys = new Keys("pinboard:", 16);

/** What a bucket needs for a resolve of the namespace, as a lost bucket loses it (boot_time aside). */
function bucketKeys(bucket: number, ns: string): string[] {
  return [
    ...keys.nsListKeys(bucket, SINGLE_HOSTNAME, ns),
    keys.workers(bucket),
    keys.workerExpiries(bucket),
    keys.clients(bucket),
    keys.spent(bucket),
  ];
}

async function idInBucket(bucket: number, prefix: string): Promise<string> {
  for (let i = 0; ; i++) if ((await keys.bucketOf(`${prefix}-${i}`)) === bucket) return `${prefix}-${i}`;
}

const back = (bucket: number, d: number) => (((bucket - d) % keys.shards) + keys.shards) % keys.shards;

describe("a bucket that lost its namespace list, on the Node entry with a real worker", () => {
  // A long lease: the worker heartbeats every 20 s, and each test checks that none came between
  // the loss and the forward (the record's revision is unchanged).
  let fleet: Fleet;
  beforeAll(async () => {
    fleet = await startFleet({ workers: 1, env: { PINBOARD_LEASE_TTL_MS: "60000" } });
    await fleet.skipColdStart();
  });
  afterAll(() => fleet?.close());

  const sessionRev = async (): Promise<number> => {
    const sid = fleet.workers[0]!.worker.sessionId!;
    return (JSON.parse((await fleet.t.redis.hget(keys.sessions, sid))!) as { rev: number }).rev;
  };
  const del = async (bucket: number) => {
    // One DEL per key: on a cluster they share the bucket's slot anyway.
    for (const key of bucketKeys(bucket, "/echo")) await fleet.t.redis.client.del(key);
  };

  it("copies the previous bucket's list and forwards, without a heartbeat in between", async () => {
    const bucket = 5;
    const id = await idInBucket(bucket, "lost");
    const rev = await sessionRev();
    await del(bucket);
    expect(await fleet.t.redis.client.exists(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/echo"))).toBe(0);

    const res = await fetch(`${fleet.pb.url}/echo/${id}/hello`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as { path: string; epoch: string };
    expect(body.path).toBe("/hello");
    expect(body.epoch).toMatch(/^\d+$/);
    expect(await sessionRev()).toBe(rev);

    const sid = fleet.workers[0]!.worker.sessionId!;
    expect(Object.keys(await fleet.t.redis.client.hgetall(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/echo")))).toEqual([
      sid,
    ]);
    expect(await fleet.t.redis.hget(keys.workers(bucket), sid)).not.toBeNull();
  });

  it("searches further back when the previous bucket lost its list too", async () => {
    const bucket = 9;
    const id = await idInBucket(bucket, "lost-two");
    const rev = await sessionRev();
    await del(bucket);
    await del(back(bucket, 1));
    await del(back(bucket, 2));

    const res = await fetch(`${fleet.pb.url}/echo/${id}`);
    expect(res.status).toBe(200);
    expect(await sessionRev()).toBe(rev);
    expect(await fleet.t.redis.client.exists(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/echo"))).toBe(1);
  });

  it("a namespace that no bucket within reach lists stays 404 unknown namespace, and nothing is written for it", async () => {
    const res = await fetch(`${fleet.pb.url}/nobody/some-id`);
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({ error: "unknown namespace" });
    expect(await fleet.t.keys("*nobody*")).toEqual([]);
  });
});

describe("the copy and the heartbeat, in-process", () => {
  let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
  useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));
  beforeAll(async () => {
    await endColdStart(t, keys);
  });

  const resolve = (ns: string, id: string) =>
    resolvePlacement(pb.deps, { ns, id, env: SINGLE_ENV, hostname: "", takeover: "" });
  const listed = async (bucket: number, ns: string) =>
    Object.keys(await t.redis.client.hgetall(keys.nsWorkers(bucket, SINGLE_HOSTNAME, ns))).sort();

  it("heartbeat re-adds the worker to every namespace list in its bucket", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/hb-a", "/hb-b"] }));
    const bucket = 3;
    for (const ns of ["/hb-a", "/hb-b"])
      for (const key of keys.nsListKeys(bucket, SINGLE_HOSTNAME, ns)) await t.redis.client.del(key);
    await t.redis.client.del(keys.workers(bucket));
    await t.redis.client.del(keys.workerExpiries(bucket));
    expect(await listed(bucket, "/hb-a")).toEqual([]);

    const res = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: heartbeatBody(worker, sessionId, { headroom: 42 }),
    });
    expect(res.status).toBe(200);
    for (const ns of ["/hb-a", "/hb-b"]) {
      expect(await listed(bucket, ns)).toEqual([sessionId]);
      const [, headroom, flags] = (await t.redis.hget(keys.nsWorkers(bucket, SINGLE_HOSTNAME, ns), sessionId))!.split(
        "\n",
      );
      expect([headroom, flags]).toEqual(["42", ""]);
    }
    expect((await resolve("/hb-b", await idInBucket(bucket, "hb"))).sessionId).toBe(sessionId);
  });

  it("copies the list with its mirrors, and only while the list is missing", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { namespaces: ["/cp"], headroom: 70 }));
    const b = await registerOk(pb, token, registerBody(worker, { namespaces: ["/cp", "/cp-other"], headroom: 80 }));
    const bucket = 12;
    for (const key of bucketKeys(bucket, "/cp")) await t.redis.client.del(key);
    // b's other namespace list survives: the copy leaves it alone.
    const otherBefore = await t.redis.client.hgetall(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/cp-other"));

    expect(await copyPreviousNamespaceList(pb.deps, bucket, SINGLE_HOSTNAME, "/cp")).toBe(back(bucket, 1));
    expect(await listed(bucket, "/cp")).toEqual([a.sessionId, b.sessionId].sort());
    for (const [sid, headroom] of [
      [a.sessionId, "70"],
      [b.sessionId, "80"],
    ] as const) {
      expect((await t.redis.hget(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/cp"), sid))!.split("\n")[1]).toBe(headroom);
      expect(await t.redis.hget(keys.workers(bucket), sid)).toBe(
        await t.redis.hget(keys.workers(back(bucket, 1)), sid),
      );
    }
    expect(await t.redis.client.hgetall(keys.nsWorkers(bucket, SINGLE_HOSTNAME, "/cp-other"))).toEqual(otherBefore);
    // The expiry indexes are in step with what they index (a resolve would otherwise rebuild them).
    expect(await t.redis.client.zcard(keys.nsExpiries(bucket, SINGLE_HOSTNAME, "/cp"))).toBe(2);
    expect(await t.redis.client.zcard(keys.workerExpiries(bucket))).toBe(
      await t.redis.client.hlen(keys.workers(bucket)),
    );

    // Present now: a second copy writes nothing.
    const before = await t.snapshot();
    expect(await copyPreviousNamespaceList(pb.deps, bucket, SINGLE_HOSTNAME, "/cp")).toBe(back(bucket, 1));
    expect(await t.snapshot()).toEqual(before);

    expect([a.sessionId, b.sessionId]).toContain((await resolve("/cp", await idInBucket(bucket, "cp"))).sessionId);
  });

  it("a resolve copies from at most NS_LIST_COPY_REACH buckets back, else answers unknown-ns", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/far"] }));
    const bucket = 7;
    const id = await idInBucket(bucket, "far");
    const lose = async (from: number, to: number) => {
      for (let d = from; d <= to; d++)
        for (const key of keys.nsListKeys(back(bucket, d), SINGLE_HOSTNAME, "/far")) await t.redis.client.del(key);
    };
    // The bucket and every bucket within reach lost the list: only one beyond reach has it.
    await lose(0, NS_LIST_COPY_REACH);
    await expect(resolve("/far", id)).rejects.toMatchObject({ outcome: "unknown-ns", status: 404 });
    expect(await listed(bucket, "/far")).toEqual([]);

    // The farthest bucket within reach has it: copied from there.
    const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(res.status).toBe(200);
    await lose(0, NS_LIST_COPY_REACH - 1);
    expect((await resolve("/far", id)).sessionId).toBe(sessionId);
    expect(await listed(bucket, "/far")).toEqual([sessionId]);
  });
});

describe("hostname-aware: the list of {hostname}{ns}", () => {
  let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
  useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, worker, token } = f));

  it("is copied from the previous bucket, the binding's env and the hostname kept", async () => {
    await endColdStart(t, keys);
    const { sessionId } = await registerOk(
      pb,
      token,
      registerBody(worker, { namespaces: ["/rooms"], hostname: "alpha.example", env: "blue", epoch: 1 }),
    );
    const bucket = 4;
    for (const key of keys.nsListKeys(bucket, "alpha.example", "/rooms")) await t.redis.client.del(key);
    await t.redis.client.del(keys.workers(bucket));
    await t.redis.client.del(keys.workerExpiries(bucket));
    const id = await idInBucket(bucket, "aware");
    const placed = await resolvePlacement(pb.deps, {
      ns: "/rooms",
      id,
      env: "blue",
      hostname: "alpha.example",
      takeover: "wind_down",
    });
    expect(placed).toMatchObject({ sessionId, ownerHostname: "alpha.example", fresh: true });
    expect(Object.keys(await t.redis.client.hgetall(keys.nsWorkers(bucket, "alpha.example", "/rooms")))).toEqual([
      sessionId,
    ]);
    // Another hostname's list is another list: still unknown.
    await expect(
      resolvePlacement(pb.deps, {
        ns: "/rooms",
        id: `${id}-b`,
        env: "blue",
        hostname: "beta.example",
        takeover: "wind_down",
      }),
    ).rejects.toMatchObject({
      outcome: "unknown-ns",
    });
  });
});
