import { Cluster, Redis } from "ioredis";
import { pairs, timeReplyToMs, withScores, type RedisPort, type RedisReply, type ScriptCall } from "./port.ts";
import type { Logger } from "../log.ts";
import { evalScript, type LuaScript } from "../contract/lua-script.ts";

export interface TcpRedisOptions {
  url?: string;
  clusterNodes?: string[];
  /** How long one command may wait for an answer before it fails (ms). */
  commandTimeoutMs?: number;
  /**
   * Where connection errors and recoveries go (warn / info), each naming the address. Without
   * it they reach callers only through rejected commands.
   */
  log?: Pick<Logger, "warn" | "info">;
}

/** The same connection error is logged again at most this often while it lasts (ms). */
const REPEAT_ERROR_LOG_MS = 30_000;

/** The Redis a TcpRedis talks to, for logs: the URL with its password replaced, or the seed nodes. */
export function describeRedisAddress(options: Pick<TcpRedisOptions, "url" | "clusterNodes">): string {
  if (options.clusterNodes?.length) return `Redis Cluster ${options.clusterNodes.join(",")}`;
  if (options.url === undefined) return "Redis";
  try {
    const url = new URL(options.url);
    if (url.password) url.password = "***";
    return url.toString().replace(/\/$/, "");
  } catch {
    return "Redis (unparsable URL)";
  }
}

type Client = Redis | Cluster;

/**
 * The Node entry's Redis adapter: ioredis over TCP, a single server (REDIS_URL) or a Redis
 * Cluster (REDIS_CLUSTER_NODES). Concurrent commands share one connection per node without
 * waiting for each other, so the bucket fan-out of a heartbeat costs about one round trip.
 */
export class TcpRedis implements RedisPort {
  readonly client: Client;
  /** The address (password redacted), as every log of this adapter names it. */
  readonly address: string;
  /** The last connection error's message, until the connection is ready again. */
  lastError: string | undefined;
  private readonly timeoutMs: number;
  private corked = false;

  constructor(options: TcpRedisOptions) {
    this.timeoutMs = options.commandTimeoutMs ?? 5000;
    const common = {
      // RESP2, as Upstash speaks it and the scripts assume: Lua false is nil, numbers are integers.
      protocol: 2 as const,
      // Commands are written as they come and answered in order on the one connection, so the
      // bucket fan-out still costs one round trip. Auto-pipelining would also batch the writes,
      // but its per-command bookkeeping costs the hot path more CPU than the syscalls it saves
      // (compare with `npm run bench:ab`).
      enableAutoPipelining: false,
      maxRetriesPerRequest: 1,
      commandTimeout: this.timeoutMs,
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
    this.address = describeRedisAddress(options);
    // Errors reach callers through rejected commands; the log says where and what, once per
    // distinct error (again every 30 s while it lasts), and when the connection is back.
    const log = options.log;
    let logged: { message: string; at: number } | undefined;
    this.client.on("error", (err: Error) => {
      const message = describeError(err);
      this.lastError = message;
      const now = Date.now();
      if (logged?.message === message && now - logged.at < REPEAT_ERROR_LOG_MS) return;
      logged = { message, at: now };
      log?.warn(`redis error at ${this.address}: ${message}`, { redis: this.address, error: message });
    });
    this.client.on("ready", () => {
      if (this.lastError !== undefined) log?.info(`redis connected at ${this.address}`, { redis: this.address });
      this.lastError = undefined;
      logged = undefined;
    });
  }

  /**
   * A Cluster holds commands in its offline queue while no node answers, where the per-node
   * commandTimeout does not reach them: give every cluster command the same deadline, so a
   * cluster that is down is a bounded failure (503) rather than a hang. Like any timeout, the
   * command may still run once the cluster is back.
   */
  private within<T>(command: () => Promise<T>): Promise<T> {
    if (!(this.client instanceof Cluster)) {
      this.batchWrites();
      return command();
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`Redis Cluster did not answer within ${this.timeoutMs} ms`)), this.timeoutMs);
    });
    return Promise.race([command(), deadline]).finally(() => clearTimeout(timer));
  }

  /**
   * The commands of one turn of the event loop leave in one write: the first corks the socket
   * and the check phase (setImmediate, after every I/O callback of the turn) uncorks it, so that
   * at load the resolves of many requests share one write(2) instead of one each. A Cluster
   * spreads commands over several sockets and keeps writing each at once.
   */
  private batchWrites(): void {
    if (this.corked || !(this.client instanceof Redis) || this.client.status !== "ready") return;
    const stream = this.client.stream;
    this.corked = true;
    stream.cork();
    setImmediate(() => {
      this.corked = false;
      stream.uncork();
    });
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    // A plain promise chain, not an async closure: this runs once per request.
    return this.within(() =>
      evalScript(
        script,
        (sha) => this.client.evalsha(sha, keys.length, ...keys, ...args) as Promise<RedisReply>,
        (source) => this.client.eval(source, keys.length, ...keys, ...args) as Promise<RedisReply>,
      ),
    );
  }

  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return Promise.all(calls.map((c) => this.run(c.script, c.keys, c.args)));
  }

  timeMs(): Promise<number> {
    const client = this.client;
    return this.within(async () => timeReplyToMs(client instanceof Cluster ? await client.nodes("master")[0]!.time() : await client.time()));
  }

  get(key: string): Promise<string | null> {
    return this.within(() => this.client.get(key));
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.within(() => this.client.hgetall(key));
  }

  async set(key: string, value: string): Promise<void> {
    await this.within(() => this.client.set(key, value));
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.within(() => this.client.hget(key, field));
  }

  smembers(key: string): Promise<string[]> {
    return this.within(() => this.client.smembers(key));
  }

  hscan(key: string, cursor: string, count: number): Promise<[string, Record<string, string>]> {
    return this.within(async () => {
      const [next, flat] = await this.client.hscan(key, cursor, "COUNT", count);
      return [next, pairs(flat)];
    });
  }

  zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    if (members.length === 0) return Promise.resolve([]);
    return this.within(async () => (await this.client.zmscore(key, ...members)).map((s) => (s === null ? null : Number(s))));
  }

  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return this.within(async () => withScores(await this.client.zrangebyscore(key, min, max, "WITHSCORES", "LIMIT", 0, limit)));
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

/** An error's message, with the code of an aggregate (ioredis' connect errors on dual-stack hosts). */
function describeError(err: Error): string {
  const code = (err as { code?: string }).code;
  const message = err.message || (err instanceof AggregateError ? err.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join("; ") : "");
  return message || code || String(err);
}
