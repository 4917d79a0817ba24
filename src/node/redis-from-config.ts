import type { Config } from "../config.ts";
import type { RedisPort } from "../redis/port.ts";
import { TcpRedis } from "../redis/tcp.ts";
import { UpstashRedis } from "../redis/upstash.ts";
import { startEmbeddedRedis, type EmbeddedRedis } from "./embedded-redis.ts";

export interface NodeRedis {
  port: RedisPort;
  /** Set when Pinboard runs its own private redis-server. */
  embedded?: EmbeddedRedis;
  /** The durability store's Redis (PINBOARD_DURABLE_REDIS_URL), when it is not Pinboard's own. */
  durable?: RedisPort;
  describe: string;
}

/**
 * The Node entry's Redis: a Cluster (REDIS_CLUSTER_NODES), a server (REDIS_URL), Upstash over
 * REST (UPSTASH_REDIS_REST_URL), or else a private redis-server spawned on a free port.
 */
export async function redisFromConfig(config: Config): Promise<NodeRedis> {
  const main = await mainRedis(config);
  return config.durable.redisUrl ? { ...main, durable: new TcpRedis({ url: config.durable.redisUrl, commandTimeoutMs: config.redis.timeoutMs }) } : main;
}

async function mainRedis(config: Config): Promise<NodeRedis> {
  const { redis } = config;
  if (redis.clusterNodes?.length) {
    return { port: new TcpRedis({ clusterNodes: redis.clusterNodes, commandTimeoutMs: redis.timeoutMs }), describe: `Redis Cluster ${redis.clusterNodes.join(",")}` };
  }
  if (redis.url) return { port: new TcpRedis({ url: redis.url, commandTimeoutMs: redis.timeoutMs }), describe: redactUrl(redis.url) };
  if (redis.restUrl && redis.restToken) {
    return { port: new UpstashRedis({ url: redis.restUrl, token: redis.restToken }), describe: `Upstash REST ${redis.restUrl}` };
  }
  const embedded = await startEmbeddedRedis();
  return {
    port: new TcpRedis({ url: embedded.url, commandTimeoutMs: redis.timeoutMs }),
    embedded,
    describe: `embedded redis-server on ${embedded.url} (pid ${embedded.process.pid}; not persisted)`,
  };
}

function redactUrl(value: string): string {
  const url = new URL(value);
  if (url.password) url.password = "***";
  return url.toString();
}
