import { Cluster, type Redis } from "ioredis";
import { DEFAULT_DURABLE_PREFIX, DurableKeys, instanceMember } from "../contract/durable-index.ts";
import { evalScript, type LuaScript } from "../contract/lua-script.ts";
import {
  type ActivateInfo,
  type ActivateResult,
  compareKeys,
  type DurabilityStore,
  DurabilityUnavailableError,
  type InstanceRef,
  type ListOptions,
  StaleEpochError,
  type StorageWrite,
} from "./durability.ts";
import {
  durableActivate,
  durableClearAlarm,
  durableCommit,
  durableDelete,
  durableDeleteAll,
  durableList,
  durablePut,
  durableSetAlarm,
  durableUnindexAlarm,
} from "./durability-scripts.ts";
import { ownRedisConnection } from "./redis-connection.ts";

export interface RedisDurabilityStoreOptions {
  /** A connected ioredis client (single node or Cluster), or a redis:// URL to connect to. */
  redis: Redis | Cluster | string;
  /** Key prefix, default "pinned:". */
  prefix?: string | undefined;
  /** With a URL: how long one command may take before it fails (default 5000 ms); see redis-connection.ts. */
  commandTimeoutMs?: number | undefined;
}

type Arg = string | number | Buffer;

/**
 * The DurabilityStore on Redis. Each fenced write is one Lua script over the instance's keys
 * (one hash slot). The sweeper's index (src/contract/durable-index.ts) is written by separate
 * commands after a write succeeds, so it is advisory: the meta hash is the truth, and every
 * activation rewrites the instance's index entries from it.
 */
export class RedisDurabilityStore implements DurabilityStore {
  readonly keys: DurableKeys;
  readonly client: Redis | Cluster;
  /** The Redis this store uses, for messages: its URL with the password replaced by ***. */
  readonly name: string;
  private readonly owned: boolean;
  private connectionError: string | undefined;

  constructor(options: RedisDurabilityStoreOptions) {
    checkRedisOption(options?.redis);
    this.keys = new DurableKeys(options.prefix ?? DEFAULT_DURABLE_PREFIX);
    if (typeof options.redis === "string") {
      this.name = redactRedisUrl(options.redis);
      // A script written to a connection that then dies may have run: it fails (the caller sees
      // an error, Pinboard retries the request) and is never written again on the next connection.
      this.client = ownRedisConnection(options.redis, options.commandTimeoutMs);
      // ioredis reconnects on its own; keep the cause for the messages of failed commands.
      this.client.on("error", (err: unknown) => (this.connectionError = connectionCause(err)));
      this.client.on("ready", () => (this.connectionError = undefined));
      this.owned = true;
    } else {
      this.client = options.redis;
      this.name = describeClient(options.redis);
      this.owned = false;
    }
  }

  /** The last connection error while the client is not connected ("ECONNREFUSED", …). */
  get lastError(): string | undefined {
    return this.client.status === "ready" ? undefined : this.connectionError;
  }

  /**
   * Rethrows a failed command: Redis's own answers (ReplyError) and fences as they are, anything
   * else (no connection, retries exhausted) as a DurabilityUnavailableError naming this store.
   */
  private async guard<T>(command: Promise<T>): Promise<T> {
    try {
      return await command;
    } catch (err) {
      if (err instanceof StaleEpochError || (err instanceof Error && err.name === "ReplyError")) throw err;
      if (err instanceof DurabilityUnavailableError) throw err;
      const last = this.lastError;
      const reason = last ? `unreachable (${last})` : err instanceof Error ? err.message : String(err);
      throw new DurabilityUnavailableError(this.name, reason, err);
    }
  }

  private async run(script: LuaScript, keys: string[], args: Arg[]): Promise<unknown> {
    return this.guard(
      evalScript<unknown>(
        script,
        (sha) => this.client.evalsha(sha, keys.length, ...keys, ...args),
        (source) => this.client.eval(source, keys.length, ...keys, ...args),
      ),
    );
  }

  private async fenced(s: LuaScript, epoch: string, keys: string[], args: Arg[]): Promise<unknown[]> {
    const reply = (await this.run(s, keys, [epoch, ...args])) as unknown[];
    if (reply[0] === 0) throw new StaleEpochError(epoch, String(reply[1]));
    return reply;
  }

  private instanceKeys(ref: InstanceRef): [string, string, string] {
    return [this.keys.meta(ref.ns, ref.id), this.keys.data(ref.ns, ref.id), this.keys.keys(ref.ns, ref.id)];
  }

  async activate(ref: InstanceRef, epoch: string, info: ActivateInfo = {}): Promise<ActivateResult> {
    const reply = await this.fenced(durableActivate, epoch, [this.keys.meta(ref.ns, ref.id)], [info.hostname ?? ""]);
    const alarm = reply[1] ? Number(reply[1]) : null;
    const member = instanceMember(ref.ns, ref.id);
    await this.guard(
      Promise.all([
        info.hostname
          ? this.client.hset(this.keys.instances, member, info.hostname)
          : this.client.hsetnx(this.keys.instances, member, ""),
        alarm === null ? this.client.zrem(this.keys.alarms, member) : this.client.zadd(this.keys.alarms, alarm, member),
      ]),
    );
    return { alarm };
  }

  async get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]> {
    if (keys.length === 0) return [];
    return this.guard(this.client.hmget(this.keys.data(ref.ns, ref.id), ...keys));
  }

  async list(ref: InstanceRef, options: ListOptions = {}): Promise<[string, string][]> {
    const { min, max } = lexRange(options);
    if (min === null || max === null) return [];
    const count = options.limit === undefined ? -1 : Math.max(0, Math.floor(options.limit));
    if (count === 0) return [];
    const [data, keys] = [this.keys.data(ref.ns, ref.id), this.keys.keys(ref.ns, ref.id)];
    const flat = (await this.run(
      durableList,
      [data, keys],
      [min, max, count, options.reverse ? "1" : "0"],
    )) as string[];
    const out: [string, string][] = [];
    for (let i = 0; i < flat.length; i += 2) out.push([flat[i]!, flat[i + 1]!]);
    return out;
  }

  async put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void> {
    if (entries.length === 0) return;
    await this.fenced(durablePut, epoch, this.instanceKeys(ref), entries.flat());
  }

  async commit(ref: InstanceRef, epoch: string, writes: StorageWrite[]): Promise<void> {
    if (writes.length === 0) return;
    const puts: string[] = [];
    const deletes: string[] = [];
    for (const [key, value] of writes) {
      if (value === null) deletes.push(key);
      else puts.push(key, value);
    }
    await this.fenced(durableCommit, epoch, this.instanceKeys(ref), [puts.length / 2, ...puts, ...deletes]);
  }

  async delete(ref: InstanceRef, epoch: string, keys: string[]): Promise<number> {
    const reply = await this.fenced(durableDelete, epoch, this.instanceKeys(ref), [...new Set(keys)]);
    return Number(reply[1]);
  }

  async deleteAll(ref: InstanceRef, epoch: string): Promise<void> {
    await this.fenced(durableDeleteAll, epoch, this.instanceKeys(ref), []);
    await this.guard(this.client.zrem(this.keys.alarms, instanceMember(ref.ns, ref.id)));
  }

  async setAlarm(ref: InstanceRef, epoch: string, atMs: number | null): Promise<void> {
    const at = atMs === null ? null : Math.floor(atMs);
    await this.fenced(durableSetAlarm, epoch, [this.keys.meta(ref.ns, ref.id)], [at === null ? "" : String(at)]);
    const member = instanceMember(ref.ns, ref.id);
    await this.guard(
      at === null ? this.client.zrem(this.keys.alarms, member) : this.client.zadd(this.keys.alarms, at, member),
    );
  }

  async getAlarm(ref: InstanceRef): Promise<number | null> {
    const value = await this.guard(this.client.hget(this.keys.meta(ref.ns, ref.id), "alarm"));
    return value ? Number(value) : null;
  }

  async clearAlarm(ref: InstanceRef, epoch: string, expectedAtMs: number): Promise<boolean> {
    const at = String(Math.floor(expectedAtMs));
    const reply = await this.fenced(durableClearAlarm, epoch, [this.keys.meta(ref.ns, ref.id)], [at]);
    const cleared = Number(reply[1]) === 1;
    if (cleared) await this.run(durableUnindexAlarm, [this.keys.alarms], [instanceMember(ref.ns, ref.id), at]);
    return cleared;
  }

  async epochOf(ref: InstanceRef): Promise<string | null> {
    return this.guard(this.client.hget(this.keys.meta(ref.ns, ref.id), "epoch"));
  }

  async close(): Promise<void> {
    if (!this.owned) return;
    // QUIT on a client that is not connected would wait out its reconnects: just disconnect.
    if (this.client.status !== "ready") return this.client.disconnect();
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}

/** A redis:// URL with its password replaced by *** (an unparsable one is not shown). */
const NO_REDIS =
  "RedisDurabilityStore: no Redis given: set the redis option to a redis:// URL " +
  "(DURABLE_REDIS_URL in .pinboard/dev.env after npm start) or an ioredis client";

/**
 * The redis option is a redis:// or rediss:// URL or an ioredis client; anything else (an unset
 * variable, a host:port) would fail only at the first activation, in words of ioredis's internals.
 */
function checkRedisOption(redis: unknown): void {
  if (redis === undefined || redis === null || redis === "") throw new TypeError(NO_REDIS);
  if (typeof redis === "object") {
    if (typeof (redis as { evalsha?: unknown }).evalsha === "function") return;
    throw new TypeError(
      "RedisDurabilityStore: the redis option must be a redis:// URL or an ioredis client (Redis or Cluster), not another object",
    );
  }
  if (typeof redis !== "string") throw new TypeError(`${NO_REDIS}, not a ${typeof redis}`);
  const redacted = redis.replace(/:[^:@/]*@/, ":***@");
  const shown = JSON.stringify(redacted);
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(redis)) {
    throw new TypeError(`RedisDurabilityStore: the redis option ${shown} has no scheme; write "redis://${redacted}"`);
  }
  let protocol: string;
  try {
    protocol = new URL(redis).protocol;
  } catch {
    throw new TypeError(
      `RedisDurabilityStore: the redis option ${shown} is not a valid URL, e.g. redis://127.0.0.1:6379`,
    );
  }
  if (protocol !== "redis:" && protocol !== "rediss:") {
    throw new TypeError(`RedisDurabilityStore: the redis option must be a redis:// or rediss:// URL, not ${shown}`);
  }
}

export function redactRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password) parsed.password = "***";
    return parsed.toString().replace(/\/$/, "");
  } catch {
    return "(an unparsable Redis URL)";
  }
}

/** Where a client given to the store connects, for messages. */
function describeClient(client: Redis | Cluster): string {
  if (client instanceof Cluster) {
    const nodes = client.nodes().map((n) => `${n.options.host}:${n.options.port}`);
    return `Redis Cluster${nodes.length ? ` (${nodes.join(",")})` : ""}`;
  }
  const o = client.options;
  if (o.path) return `redis+unix://${o.path}`;
  return `${o.tls ? "rediss" : "redis"}://${o.host ?? "localhost"}:${o.port ?? 6379}${o.db ? `/${o.db}` : ""}`;
}

/** A connection error in a few words: the system code (ECONNREFUSED, ENOTFOUND, …) or the message. */
function connectionCause(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === "string" && code) return code;
  return err instanceof Error ? err.message : String(err);
}

/**
 * The BYLEX bounds for ListOptions: the tighter of start/prefix below and end/prefix above.
 * Bounds are Buffers so the prefix's upper bound can end in byte 0xFF, which no UTF-8 key holds.
 * Null when the range is empty.
 */
function lexRange(options: ListOptions): { min: Buffer | string | null; max: Buffer | string | null } {
  let low: { key: string; inclusive: boolean } | null = null;
  if (options.start !== undefined) low = { key: options.start, inclusive: true };
  if (options.prefix !== undefined && options.prefix !== "" && (!low || compareKeys(options.prefix, low.key) > 0)) {
    low = { key: options.prefix, inclusive: true };
  }
  let high: Buffer | null = null;
  if (options.end !== undefined) high = Buffer.concat([Buffer.from("("), Buffer.from(options.end)]);
  if (options.prefix !== undefined && options.prefix !== "") {
    const prefixHigh = Buffer.concat([Buffer.from(options.prefix), Buffer.from([0xff])]);
    if (!high || Buffer.compare(prefixHigh, high.subarray(1)) < 0) {
      high = Buffer.concat([Buffer.from("("), prefixHigh]);
    }
  }
  const min = low ? Buffer.concat([Buffer.from(low.inclusive ? "[" : "("), Buffer.from(low.key)]) : "-";
  const max = high ?? "+";
  if (low && high && Buffer.compare(Buffer.from(low.key), high.subarray(1)) >= 0) return { min: null, max: null };
  return { min, max };
}
