import type { LuaScript } from "../contract/lua-script.ts";
import type { RequestMeter } from "./request-meter.ts";

/** A value that a Lua script or command may return over RESP2 (after adapter normalisation). */
export type RedisReply = string | number | null | RedisReply[];

/**
 * The narrow Redis port the app core talks to. Everything that changes state goes through
 * `run` (one Lua script, EVALSHA with EVAL on NOSCRIPT); the few plain commands are reads
 * that operators and tests need. Two adapters implement it: `@upstash/redis` over HTTP
 * (src/redis/rest/) and ioredis over TCP, to one server or a Redis Cluster (src/runtime/node/redis/).
 */
export interface RedisPort {
  /** Runs a registered script atomically; every key must share one hash slot. */
  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply>;
  /** Runs several scripts, each atomic on its own slot, in one round trip where the adapter can. */
  runMany(calls: ScriptCall[]): Promise<RedisReply[]>;
  /** Redis TIME in milliseconds. */
  timeMs(): Promise<number>;
  get(key: string): Promise<string | null>;
  set(key: string, value: string): Promise<void>;
  hgetall(key: string): Promise<Record<string, string>>;
  hget(key: string, field: string): Promise<string | null>;
  /** The value of each field (null where it has none), in order; one command. */
  hmget(key: string, fields: string[]): Promise<(string | null)[]>;
  smembers(key: string): Promise<string[]>;
  /**
   * One HSCAN page: the next cursor ("0" when done) and the [field, value] pairs in Redis' order
   * (a record would move integer-like fields first, and a page resumed with another COUNT must
   * start with the same fields). `count` is how many fields Redis looks at (a hint); with `match`
   * (a glob: src/redis/glob.ts) only the fields that match it come back, so a page may hold few
   * pairs, none even, and still name a cursor.
   */
  hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]>;
  /** The score of each member (null where it has none), in order. */
  zmscore(key: string, members: string[]): Promise<(number | null)[]>;
  /** Members with their scores, score in [min, max], at most `limit`. */
  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>>;
  /** Releases connections; the port is unusable afterwards. */
  close(): Promise<void>;
  /**
   * A view of this port that calls `meter.take()` before each request it sends to the server,
   * counted exactly as the transport sends them (request-meter.ts meters per call where a port
   * lacks this).
   */
  metered?(meter: RequestMeter): RedisPort;
}

export interface ScriptCall {
  script: LuaScript;
  keys: string[];
  args: (string | number)[];
}

/** Redis TIME's [seconds, microseconds] as milliseconds. */
export function timeReplyToMs(reply: readonly (string | number)[]): number {
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}

/**
 * Pairs a flat [field, value, …] reply into a record. defineProperty, so a field named
 * "__proto__" is a field, not a prototype.
 */
export function pairs(flat: readonly unknown[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) {
    Object.defineProperty(record, String(flat[i]), {
      value: String(flat[i + 1]),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return record;
}

/** Pairs a flat [field, value, …] reply, in its order. */
export function pairList(flat: readonly unknown[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), String(flat[i + 1])]);
  return out;
}

/** Pairs a flat [member, score, …] reply. */
export function withScores(flat: readonly unknown[]): Array<[string, number]> {
  const out: Array<[string, number]> = [];
  for (let i = 0; i + 1 < flat.length; i += 2) out.push([String(flat[i]), Number(flat[i + 1])]);
  return out;
}
