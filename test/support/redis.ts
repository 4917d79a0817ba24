import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/node/embedded-redis.ts";
import { TcpRedis } from "../../src/redis/tcp.ts";
import type { RedisCluster } from "./redis-cluster.ts";

export interface TestRedis {
  server: EmbeddedRedis;
  /** A raw ioredis client for assertions (DUMP of the keyspace, FLUSHALL, …). */
  redis: TcpRedis;
  url: string;
  /**
   * Set on a Redis Cluster (testRedisOnCluster): the seed nodes for REDIS_CLUSTER_NODES. `server`
   * and `url` are then the cluster's first node, and `redis` routes every command by its key.
   */
  clusterNodes?: string;
  /**
   * Every key with its type and value, sorted: compare two snapshots to prove a request changed
   * nothing. The fleet license and membership are left out: the node renews them on its own
   * schedule (a third of a lease), whatever the request.
   */
  snapshot(): Promise<Record<string, unknown>>;
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/** A private redis-server for one test file, on a free port (never the shared 6379). */
export async function startTestRedis(): Promise<TestRedis> {
  const server = await startEmbeddedRedis();
  const redis = new TcpRedis({ url: server.url });
  return {
    server,
    redis,
    url: server.url,
    snapshot: () => snapshot(redis, () => redis.client.keys("*")),
    async flush() {
      await redis.client.flushall();
    },
    async stop() {
      await redis.close();
      await server.stop();
    },
  };
}

/**
 * The same helpers on a Redis Cluster the caller started (and stops): commands route by key, and
 * KEYS and FLUSHALL, which only see one node's slots, run on every primary. stop() closes the
 * client only.
 */
export function testRedisOnCluster(cluster: RedisCluster): TestRedis {
  const redis = new TcpRedis({ clusterNodes: cluster.nodes.split(",") });
  const first = cluster.all[0]!;
  return {
    server: first.server,
    redis,
    url: first.server.url,
    clusterNodes: cluster.nodes,
    snapshot: () => snapshot(redis, () => cluster.keys("*")),
    flush: () => cluster.flushAll(),
    stop: () => redis.close(),
  };
}

async function snapshot(redis: TcpRedis, allKeys: () => Promise<string[]>): Promise<Record<string, unknown>> {
  const client = redis.client;
  const keys = (await allKeys()).filter((k) => !/\{global\}:(license|members)$/.test(k)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await client.type(key);
    if (type === "string") out[key] = await client.get(key);
    else if (type === "hash") out[key] = await client.hgetall(key);
    else if (type === "set") out[key] = (await client.smembers(key)).sort();
    else if (type === "zset") out[key] = await client.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "list") out[key] = await client.lrange(key, 0, -1);
    else out[key] = type;
  }
  return out;
}
