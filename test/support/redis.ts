import { startEmbeddedRedis, type EmbeddedRedis } from "../../src/node/embedded-redis.ts";
import { TcpRedis } from "../../src/redis/tcp.ts";

export interface TestRedis {
  server: EmbeddedRedis;
  /** A raw ioredis client for assertions (DUMP of the keyspace, FLUSHALL, …). */
  redis: TcpRedis;
  url: string;
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
    async snapshot() {
      const client = redis.client;
      const keys = (await client.keys("*")).filter((k) => !/\{global\}:(license|members)$/.test(k)).sort();
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
    },
    async flush() {
      await redis.client.flushall();
    },
    async stop() {
      await redis.close();
      await server.stop();
    },
  };
}
