import { Cluster, Redis } from "ioredis";
import { isNoScript, pairs, timeReplyToMs, withScores, type RedisPort, type RedisReply, type ScriptCall } from "./port.ts";
import type { LuaScript } from "./script.ts";

export interface TcpRedisOptions {
  url?: string;
  clusterNodes?: string[];
  /** How long one command may wait for an answer before it fails (ms). */
  commandTimeoutMs?: number;
}

type Client = Redis | Cluster;

/**
 * The Node entry's Redis adapter: ioredis over TCP, a single server (REDIS_URL) or a Redis
 * Cluster (REDIS_CLUSTER_NODES). Concurrent commands share one connection per node without
 * waiting for each other, so the bucket fan-out of a heartbeat costs about one round trip.
 */
export class TcpRedis implements RedisPort {
  readonly client: Client;

  constructor(options: TcpRedisOptions) {
    const common = {
      // RESP2, as Upstash and DESIGN.md assume: Lua false is nil, numbers are integers.
      protocol: 2 as const,
      enableAutoPipelining: true,
      maxRetriesPerRequest: 1,
      commandTimeout: options.commandTimeoutMs ?? 5000,
      lazyConnect: false,
    };
    if (options.clusterNodes?.length) {
      this.client = new Cluster(
        options.clusterNodes.map((node) => {
          const [host, port] = node.split(":");
          return { host: host ?? "127.0.0.1", port: Number(port) };
        }),
        // No auto-pipelining on a cluster: ioredis batches the commands of several slots of one
        // node into one pipeline, and retries a redirected pipeline only when every command got
        // the same error and none was a write that succeeded. During a failover (MOVED to the
        // dead primary, for several slots) or a resharding, the raw MOVED reply would reach the
        // caller as a 500. Sent one by one, each command follows its own redirections, retries
        // (retryDelayOnFailover, retryDelayOnClusterDown) and fails after maxRedirections as
        // "too many redirections", which GuardedRedis answers with 503.
        { enableAutoPipelining: false, redisOptions: common, slotsRefreshTimeout: 2000 },
      );
    } else if (options.url) {
      this.client = new Redis(options.url, common);
    } else {
      throw new Error("TcpRedis needs a url or cluster nodes");
    }
    // Errors reach callers through rejected commands; this only keeps the emitter quiet.
    this.client.on("error", () => {});
  }

  async run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    try {
      return (await this.client.evalsha(script.sha, keys.length, ...keys, ...args)) as RedisReply;
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return (await this.client.eval(script.script, keys.length, ...keys, ...args)) as RedisReply;
    }
  }

  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return Promise.all(calls.map((c) => this.run(c.script, c.keys, c.args)));
  }

  async timeMs(): Promise<number> {
    const client = this.client;
    const reply = client instanceof Cluster ? await client.nodes("master")[0]!.time() : await client.time();
    return timeReplyToMs(reply);
  }

  get(key: string): Promise<string | null> {
    return this.client.get(key);
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.client.hgetall(key);
  }

  async set(key: string, value: string): Promise<void> {
    await this.client.set(key, value);
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.client.hget(key, field);
  }

  smembers(key: string): Promise<string[]> {
    return this.client.smembers(key);
  }

  async hscan(key: string, cursor: string, count: number): Promise<[string, Record<string, string>]> {
    const [next, flat] = await this.client.hscan(key, cursor, "COUNT", count);
    return [next, pairs(flat)];
  }

  async zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    const flat = await this.client.zrangebyscore(key, min, max, "WITHSCORES", "LIMIT", 0, limit);
    return withScores(flat);
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
