import type { Cluster, Redis } from "ioredis";
import type { LuaScript } from "../../../contract/lua-script.ts";
import type { Logger } from "../../../log/logger.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../../../redis/port.ts";
import { clusterClient, clusterDeadline, serverClient } from "./ioredis-clients.ts";
import { IoredisPort } from "./ioredis-port.ts";

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

/** What the ioredis adapter implements; TcpRedis runs several scripts through its own `run`. */
export type TcpPort = Omit<RedisPort, "runMany">;

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

/**
 * The Node entry's Redis adapter over TCP, through ioredis: one Redis server (REDIS_URL) or a
 * Redis Cluster (REDIS_CLUSTER_NODES), neither of which ever sends a command twice
 * (ioredis-clients.ts). Either way it logs connection errors and recoveries by address and keeps
 * the last error for /readyz.
 */
export class TcpRedis implements RedisPort {
  /** The address (password redacted), as every log of this adapter names it. */
  readonly address: string;
  /** The last connection error's message, until the connection is ready again. */
  lastError: string | undefined;
  /** The ioredis client the port uses, for administration and tests. */
  readonly client: Redis | Cluster;
  private readonly port: TcpPort;
  private logged: { message: string; at: number } | undefined;

  constructor(private readonly options: TcpRedisOptions) {
    const timeoutMs = options.commandTimeoutMs ?? 5000;
    this.address = describeRedisAddress(options);
    if (options.clusterNodes?.length) {
      const cluster = clusterClient(options.clusterNodes, timeoutMs);
      this.client = cluster;
      this.port = new IoredisPort(cluster, clusterDeadline(timeoutMs));
    } else if (options.url) {
      const server = serverClient(options.url, timeoutMs);
      this.client = server;
      this.port = new IoredisPort(server);
    } else {
      throw new Error("TcpRedis needs a url or cluster nodes");
    }
    this.client.on("error", (err: Error) => this.failed(err));
    this.client.on("ready", () => this.connected());
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    return this.port.run(script, keys, args);
  }
  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    // Through this.run, one script at a time: ioredis writes each command at once anyway.
    return Promise.all(calls.map((c) => this.run(c.script, c.keys, c.args)));
  }
  timeMs(): Promise<number> {
    return this.port.timeMs();
  }
  get(key: string): Promise<string | null> {
    return this.port.get(key);
  }
  set(key: string, value: string): Promise<void> {
    return this.port.set(key, value);
  }
  hgetall(key: string): Promise<Record<string, string>> {
    return this.port.hgetall(key);
  }
  hget(key: string, field: string): Promise<string | null> {
    return this.port.hget(key, field);
  }
  hmget(key: string, fields: string[]): Promise<(string | null)[]> {
    return this.port.hmget(key, fields);
  }
  smembers(key: string): Promise<string[]> {
    return this.port.smembers(key);
  }
  hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]> {
    return this.port.hscan(key, cursor, count, match);
  }
  zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    return this.port.zmscore(key, members);
  }
  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return this.port.zrangeByScore(key, min, max, limit);
  }

  close(): Promise<void> {
    return this.port.close();
  }

  /**
   * Errors reach callers through rejected commands; the log says where and what, once per distinct
   * error (again every 30 s while it lasts).
   */
  private failed(err: Error): void {
    const message = describeError(err);
    this.lastError = message;
    const now = Date.now();
    if (this.logged?.message === message && now - this.logged.at < REPEAT_ERROR_LOG_MS) return;
    this.logged = { message, at: now };
    this.options.log?.warn(`redis error at ${this.address}: ${message}`, { redis: this.address, error: message });
  }

  private connected(): void {
    if (this.lastError !== undefined)
      this.options.log?.info(`redis connected at ${this.address}`, { redis: this.address });
    this.lastError = undefined;
    this.logged = undefined;
  }
}

/** An error's message, with the code of an aggregate (connect errors on dual-stack hosts). */
function describeError(err: Error): string {
  const code = (err as { code?: string }).code;
  const message =
    err.message ||
    (err instanceof AggregateError
      ? err.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join("; ")
      : "");
  return message || code || String(err);
}
