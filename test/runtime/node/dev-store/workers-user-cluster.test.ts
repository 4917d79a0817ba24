import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DurableKeys } from "../../../../src/contract/durable-index.ts";
import { RedisDurabilityStore } from "../../../../src/pinned/index.ts";
import { Keys } from "../../../../src/redis/keys.ts";
import { WORKER_CLUSTER_COMMANDS, workerAclRules } from "../../../../src/runtime/node/dev-store/dev-store-users.ts";
import { type RedisCluster, startRedisCluster } from "../../../support/redis-cluster.ts";

/**
 * docs/operations.md's workers' user on a Redis Cluster: the same rules plus what ioredis's
 * Cluster client asks (CLUSTER SLOTS, CLUSTER INFO), set on every node. The worker library's
 * store runs on it across slots; Pinboard's keys stay out of reach.
 */

let cluster: RedisCluster;
const clients: Cluster[] = [];

beforeAll(async () => {
  cluster = await startRedisCluster({ primaries: 3 });
}, 120_000);
afterAll(async () => {
  for (const c of clients) c.disconnect();
  await cluster?.stop();
});

function workerCluster(): Cluster {
  const nodes = cluster.all.map((n) => ({ host: "127.0.0.1", port: n.port }));
  const c = new Cluster(nodes, {
    redisOptions: { username: "pinned", password: "WORKERS_PASSWORD", maxRetriesPerRequest: 1 },
  });
  c.on("error", () => {});
  clients.push(c);
  return c;
}

describe("the workers' Redis user on a Redis Cluster", { timeout: 60_000 }, () => {
  it("runs the durability store across slots and is refused Pinboard's keys", async () => {
    const rules = `${workerAclRules("pinned:")} ${WORKER_CLUSTER_COMMANDS.map((c) => `+${c}`).join(" ")}`;
    for (const node of cluster.all)
      await cluster.command(node.port, "ACL", "SETUSER", "pinned", "on", ">WORKERS_PASSWORD", ...rules.split(" "));
    const warn = vi.spyOn(console, "warn");
    const store = new RedisDurabilityStore({ redis: workerCluster() });
    const durable = new DurableKeys();
    try {
      for (const id of ["a", "b", "c", "d", "e", "f"]) {
        const ref = { ns: "/counter", id };
        await store.activate(ref, "1", { hostname: "h" });
        await store.put(ref, "1", [["k", id]]);
        expect(await store.get(ref, ["k"])).toEqual([id]);
        expect(await store.list(ref)).toEqual([["k", id]]);
        await store.setAlarm(ref, "1", 10);
        expect(await store.clearAlarm(ref, "1", 10)).toBe(true);
        await store.deleteAll(ref, "1");
      }
      const index = await cluster.ownerOf(durable.instances);
      expect(await cluster.command(index.port, "HLEN", durable.instances)).toBe(6);
      const keys = new Keys("pinboard:", 16);
      const worker = workerCluster();
      await expect(worker.hget(keys.sessions, "s")).rejects.toThrow(/^NOPERM/);
      await expect(worker.xadd(keys.audit, "*", "a", "b")).rejects.toThrow(/^NOPERM/);
      expect(warn).not.toHaveBeenCalled();
    } finally {
      warn.mockRestore();
      await store.client.quit().catch(() => {});
    }
  });
});
