import type { Config } from "../../../config/config.ts";
import type { Logger } from "../../../log/logger.ts";
import type { RedisPort } from "../../../redis/port.ts";
import { UpstashRedis } from "../../../redis/rest/upstash-redis.ts";
import { type DevStore, startDevStore } from "../dev-store/dev-store.ts";
import { describeRedisAddress, TcpRedis } from "./tcp.ts";

export interface NodeRedis {
  port: RedisPort;
  /** Set when Pinboard runs its own private redis-server (the dev store). */
  embedded?: DevStore;
  /** The durability store's Redis (PINBOARD_DURABLE_REDIS_URL), when it is not Pinboard's own. */
  durable?: RedisPort;
  describe: string;
}

/**
 * The Node entry's Redis: a Cluster (REDIS_CLUSTER_NODES), a server (REDIS_URL), Upstash over
 * REST (UPSTASH_REDIS_REST_URL), or else the dev store: a private redis-server, kept under
 * `devDir`'s `.pinboard/redis` when given (dev-store.ts).
 */
export async function redisFromConfig(
  config: Config,
  log?: Pick<Logger, "warn" | "info">,
  devDir?: string,
): Promise<NodeRedis> {
  const main = await mainRedis(config, log, devDir);
  return config.durable.redisUrl
    ? {
        ...main,
        durable: new TcpRedis({
          url: config.durable.redisUrl,
          commandTimeoutMs: config.redis.timeoutMs,
          ...(log ? { log } : {}),
        }),
      }
    : main;
}

/**
 * Waits up to `timeoutMs` for Redis to answer TIME. Undefined when it did; else what went wrong
 * (the connection error, e.g. "connect ECONNREFUSED 127.0.0.1:6379", when there is one).
 */
export async function probeRedis(port: RedisPort, timeoutMs: number): Promise<string | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const connectionError = () => (port instanceof TcpRedis ? port.lastError : undefined);
  try {
    await Promise.race([
      port.timeMs(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      }),
    ]);
    return undefined;
  } catch (err) {
    return connectionError() ?? (err instanceof Error ? err.message : String(err));
  } finally {
    clearTimeout(timer);
  }
}

async function mainRedis(
  config: Config,
  log: Pick<Logger, "warn" | "info"> | undefined,
  devDir: string | undefined,
): Promise<NodeRedis> {
  const { redis } = config;
  const withLog = log ? { log } : {};
  if (redis.clusterNodes?.length) {
    return {
      port: new TcpRedis({ clusterNodes: redis.clusterNodes, commandTimeoutMs: redis.timeoutMs, ...withLog }),
      describe: describeRedisAddress({ clusterNodes: redis.clusterNodes }),
    };
  }
  if (redis.url)
    return {
      port: new TcpRedis({ url: redis.url, commandTimeoutMs: redis.timeoutMs, ...withLog }),
      describe: describeRedisAddress({ url: redis.url }),
    };
  if (redis.restUrl && redis.restToken) {
    return {
      port: new UpstashRedis({ url: redis.restUrl, token: redis.restToken, timeoutMs: redis.timeoutMs }),
      describe: `Upstash REST ${redis.restUrl}`,
    };
  }
  const embedded = await startDevStore(config, devDir, log);
  return {
    port: new TcpRedis({ url: embedded.url, commandTimeoutMs: redis.timeoutMs, ...withLog }),
    embedded,
    describe: embedded.describe,
  };
}
