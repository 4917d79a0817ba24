import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DurabilityStore,
  DurableKeys,
  instanceMember,
  MemoryDurabilityStore,
  parseInstanceMember,
  RedisDurabilityStore,
  StaleEpochError,
} from "../../src/pinned/index.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { durableStore } from "../support/durability.ts";
import { onCluster, startTestRedis, type TestRedis } from "../support/redis.ts";

let single: TestRedis, clusterNode: EmbeddedRedis, clusterDir: string, cluster: Cluster;

beforeAll(async () => {
  single = await startTestRedis();
  // A one-node Redis Cluster owning every slot: a script touching two slots fails there.
  clusterDir = mkdtempSync(join(tmpdir(), "pinned-cluster-"));
  clusterNode = await startEmbeddedRedis({
    args: [
      "--cluster-enabled",
      "yes",
      "--dir",
      clusterDir,
      "--cluster-config-file",
      "nodes.conf",
      "--cluster-announce-ip",
      "127.0.0.1",
    ],
  });
  const admin = new Redis(clusterNode.url);
  await admin.call("CLUSTER", "ADDSLOTSRANGE", "0", "16383");
  for (let i = 0; i < 200 && !/cluster_state:ok/.test(String(await admin.call("CLUSTER", "INFO"))); i++) {
    await new Promise((r) => setTimeout(r, 50));
  }
  await admin.quit();
  cluster = new Cluster([{ host: "127.0.0.1", port: clusterNode.port }]);
});

afterAll(async () => {
  await cluster?.quit().catch(() => {});
  await single?.stop();
  await clusterNode?.stop();
  rmSync(clusterDir, { recursive: true, force: true });
});

let n = 0;
const fresh = () => ({ ns: "/counter", id: `i${++n}-${Date.now()}` });

const stores: [string, () => DurabilityStore][] = [
  ["MemoryDurabilityStore", () => new MemoryDurabilityStore()],
  [`RedisDurabilityStore (${onCluster ? "3-primary cluster" : "single node"})`, () => durableStore(single)],
  ["RedisDurabilityStore (Redis Cluster)", () => new RedisDurabilityStore({ redis: cluster, prefix: "c:" })],
];

describe.each(stores)("%s", (_name, make) => {
  let store: DurabilityStore;
  beforeAll(() => {
    store = make();
  });
  afterAll(() => store.close?.());

  it("activates, raising the stored epoch, accepting an equal one, fencing a lower one", async () => {
    const ref = fresh();
    expect(await store.epochOf(ref)).toBeNull();
    expect(await store.activate(ref, "5")).toEqual({ alarm: null });
    expect(await store.epochOf(ref)).toBe("5");
    await store.activate(ref, "5");
    await store.activate(ref, "7");
    expect(await store.epochOf(ref)).toBe("7");
    const err = await store.activate(ref, "6").catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleEpochError);
    expect(err).toMatchObject({ quoted: "6", stored: "7" });
  });

  it("fences every write below the stored epoch and leaves the state untouched", async () => {
    const ref = fresh();
    await store.activate(ref, "10");
    await store.put(ref, "10", [
      ["a", "1"],
      ["b", "2"],
    ]);
    await store.setAlarm(ref, "10", 5000);
    await store.activate(ref, "11");

    await expect(store.put(ref, "10", [["a", "9"]])).rejects.toBeInstanceOf(StaleEpochError);
    await expect(store.delete(ref, "10", ["a"])).rejects.toBeInstanceOf(StaleEpochError);
    await expect(store.deleteAll(ref, "10")).rejects.toBeInstanceOf(StaleEpochError);
    await expect(store.setAlarm(ref, "10", null)).rejects.toBeInstanceOf(StaleEpochError);
    await expect(store.clearAlarm(ref, "10", 5000)).rejects.toBeInstanceOf(StaleEpochError);

    expect(await store.get(ref, ["a", "b", "c"])).toEqual(["1", "2", null]);
    expect(await store.getAlarm(ref)).toBe(5000);
    await store.put(ref, "11", [["a", "3"]]);
    expect(await store.get(ref, ["a"])).toEqual(["3"]);
  });

  it("lets a write at a higher epoch claim the instance", async () => {
    const ref = fresh();
    await store.activate(ref, "1");
    await store.put(ref, "2", [["k", "v"]]);
    expect(await store.epochOf(ref)).toBe("2");
    await expect(store.put(ref, "1", [["k", "w"]])).rejects.toBeInstanceOf(StaleEpochError);
  });

  it("compares epochs beyond 2^53 and with leading zeros exactly", async () => {
    const ref = fresh();
    await store.activate(ref, "9007199254740993");
    await expect(store.put(ref, "9007199254740992", [["k", "v"]])).rejects.toBeInstanceOf(StaleEpochError);
    await store.put(ref, "09007199254740993", [["k", "v"]]);
    await store.activate(ref, "100000000000000000000000");
    await expect(store.activate(ref, "99999999999999999999999")).rejects.toBeInstanceOf(StaleEpochError);
  });

  it("reads an epoch's leading zeros as nothing at the fence: 0007 is 7, 008 is 8, 0012 is 12", async () => {
    const behind = fresh();
    await store.activate(behind, "8");
    const err = await store.put(behind, "0007", [["k", "zombie"]]).catch((e: unknown) => e);
    expect(err).toMatchObject({ quoted: "0007", stored: "8" });
    await expect(store.activate(behind, "0007")).rejects.toBeInstanceOf(StaleEpochError);
    expect(await store.get(behind, ["k"])).toEqual([null]);

    const ahead = fresh();
    await store.activate(ahead, "7");
    await store.put(ahead, "008", [["k", "v8"]]);
    // Past a zero-padded fence an unpadded newer epoch still writes, and an older one never does.
    await store.put(ahead, "9", [["k", "v9"]]);
    await expect(store.put(ahead, "8", [["k", "late"]])).rejects.toBeInstanceOf(StaleEpochError);
    expect(await store.get(ahead, ["k"])).toEqual(["v9"]);

    const padded = fresh();
    await store.activate(padded, "9");
    await store.activate(padded, "0012");
    await store.put(padded, "12", [["k", "v12"]]);
    await store.put(padded, "13", [["k", "v13"]]);
    await expect(store.put(padded, "0011", [["k", "late"]])).rejects.toBeInstanceOf(StaleEpochError);
    expect(await store.get(padded, ["k"])).toEqual(["v13"]);
  });

  it("lets exactly one of many racing writers at different epochs win the fence", async () => {
    const ref = fresh();
    await store.activate(ref, "1");
    await store.activate(ref, "50");
    const results = await Promise.allSettled(
      Array.from({ length: 40 }, (_, i) => store.put(ref, String(i + 30), [["w", String(i + 30)]])),
    );
    for (const [i, r] of results.entries()) {
      expect(r.status).toBe(i + 30 < 50 ? "rejected" : "fulfilled");
    }
    expect(await store.epochOf(ref)).toBe("69");
  });

  it("deletes and counts deleted keys", async () => {
    const ref = fresh();
    await store.activate(ref, "1");
    await store.put(ref, "1", [
      ["a", "1"],
      ["b", "2"],
    ]);
    expect(await store.delete(ref, "1", ["a", "zz"])).toBe(1);
    expect(await store.get(ref, ["a", "b"])).toEqual([null, "2"]);
    await store.setAlarm(ref, "1", 123);
    await store.deleteAll(ref, "1");
    expect(await store.list(ref)).toEqual([]);
    expect(await store.getAlarm(ref)).toBeNull();
    expect(await store.epochOf(ref)).toBe("1");
  });

  it("lists in key order with prefix, start, end, reverse and limit", async () => {
    const ref = fresh();
    await store.activate(ref, "1");
    const keys = ["a", "b", "user:1", "user:2", "user:3", "user:30", "users", "z", "é"];
    await store.put(
      ref,
      "1",
      keys.map((k) => [k, JSON.stringify(k)]),
    );
    const names = async (o: Parameters<DurabilityStore["list"]>[1]) => (await store.list(ref, o)).map(([k]) => k);
    expect(await names({})).toEqual(keys);
    expect(await names({ prefix: "user:" })).toEqual(["user:1", "user:2", "user:3", "user:30"]);
    expect(await names({ prefix: "user:", reverse: true, limit: 2 })).toEqual(["user:30", "user:3"]);
    expect(await names({ start: "user:2", end: "users" })).toEqual(["user:2", "user:3", "user:30"]);
    expect(await names({ start: "b", end: "user:3", prefix: "user" })).toEqual(["user:1", "user:2"]);
    expect(await names({ limit: 0 })).toEqual([]);
    expect(await names({ start: "z", end: "a" })).toEqual([]);
    expect((await store.list(ref, { prefix: "z" }))[0]).toEqual(["z", '"z"']);
  });

  it("keeps the alarm with the instance and clears it only while unchanged", async () => {
    const ref = fresh();
    expect((await store.activate(ref, "3")).alarm).toBeNull();
    await store.setAlarm(ref, "3", 1000);
    expect(await store.getAlarm(ref)).toBe(1000);
    expect(await store.clearAlarm(ref, "3", 999)).toBe(false);
    expect(await store.getAlarm(ref)).toBe(1000);
    expect((await store.activate(ref, "4")).alarm).toBe(1000);
    expect(await store.clearAlarm(ref, "4", 1000)).toBe(true);
    expect(await store.getAlarm(ref)).toBeNull();
  });
});

describe("the one-node Redis Cluster", () => {
  it("really refuses a script across two slots (so the store tests above prove one slot)", async () => {
    await expect(cluster.eval("return redis.call('GET', KEYS[2])", 2, "{a}x", "{b}y")).rejects.toThrow(
      /CROSSSLOT|different slot/i,
    );
  });
});

describe("the sweeper's index in Redis", () => {
  let store: RedisDurabilityStore;
  const keys = new DurableKeys("idx:");
  beforeAll(() => {
    store = durableStore(single, "idx:");
  });
  afterAll(() => store.close());

  it("lists activated instances with their hostname and due alarms scored in ms", async () => {
    const client = single.redis.client;
    await store.activate({ ns: "/counter", id: "a" }, "1", { hostname: "eu.example" });
    await store.activate({ ns: "/room", id: "b" }, "1");
    expect(await client.hgetall(keys.instances)).toEqual({ "/counter/a": "eu.example", "/room/b": "" });

    await store.setAlarm({ ns: "/counter", id: "a" }, "1", 1_700_000_000_123);
    await store.setAlarm({ ns: "/room", id: "b" }, "1", 1_700_000_000_100);
    expect(await client.zrange(keys.alarms, "0", "-1", "WITHSCORES")).toEqual([
      "/room/b",
      "1700000000100",
      "/counter/a",
      "1700000000123",
    ]);
    const due = await client.zrangebyscore(keys.alarms, "-inf", "1700000000110");
    expect(due.map(parseInstanceMember)).toEqual([{ ns: "/room", id: "b" }]);

    await store.clearAlarm({ ns: "/room", id: "b" }, "1", 1_700_000_000_100);
    await store.setAlarm({ ns: "/counter", id: "a" }, "1", null);
    expect(await client.zcard(keys.alarms)).toBe(0);
  });

  it("names every key of one instance with the same hash tag", () => {
    const tag = (key: string) => /\{([^}]*)\}/.exec(key)![1];
    const member = instanceMember("/counter", "a.b~c-d_e");
    expect(tag(keys.meta("/counter", "a.b~c-d_e"))).toBe(member);
    expect(tag(keys.data("/counter", "a.b~c-d_e"))).toBe(member);
    expect(tag(keys.keys("/counter", "a.b~c-d_e"))).toBe(member);
    expect(tag(keys.instances)).toBe(tag(keys.alarms));
    expect(parseInstanceMember(member)).toEqual({ ns: "/counter", id: "a.b~c-d_e" });
    expect(parseInstanceMember("no-slash")).toBeNull();
    expect(parseInstanceMember("/ns/bad id")).toBeNull();
  });
});
