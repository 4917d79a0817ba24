import { Cluster } from "ioredis";
import { RedisDurabilityStore } from "../../src/pinned/index.ts";
import type { TestRedis } from "./redis.ts";

/** A store that owns the Cluster client it was given, and closes it with itself. */
class ClusterDurabilityStore extends RedisDurabilityStore {
  override async close(): Promise<void> {
    const client = this.client as Cluster;
    await client.quit().catch(() => client.disconnect());
  }
}

export function clusterClient(nodes: string): Cluster {
  const client = new Cluster(
    nodes.split(",").map((node) => ({ host: node.split(":")[0]!, port: Number(node.split(":")[1]) })),
    { redisOptions: { maxRetriesPerRequest: 2 } },
  );
  client.on("error", () => {});
  return client;
}

/** The worker library's Redis durability store on a TestRedis: over its cluster when it is one. */
export function durableStore(t: TestRedis, prefix?: string): RedisDurabilityStore {
  const options = prefix === undefined ? {} : { prefix };
  if (!t.clusterNodes) return new RedisDurabilityStore({ redis: t.url, ...options });
  return new ClusterDurabilityStore({ redis: clusterClient(t.clusterNodes), ...options });
}

/** What test/support/durable-worker-main.ts reads to reach the same store. */
export function durableEnv(t: TestRedis): Record<string, string> {
  return t.clusterNodes ? { DURABLE_REDIS_CLUSTER_NODES: t.clusterNodes } : { DURABLE_REDIS_URL: t.url };
}
