import type { LuaScript } from "./script.ts";

/** A value that a Lua script or command may return over RESP2 (after adapter normalisation). */
export type RedisReply = string | number | null | RedisReply[];

/**
 * The narrow Redis port the app core talks to. Everything that changes state goes through
 * `run` (one Lua script, EVALSHA with EVAL on NOSCRIPT); the few plain commands are reads
 * that operators and tests need. Two adapters implement it: `@upstash/redis` over HTTP and
 * ioredis over TCP (single node or Cluster).
 */
export interface RedisPort {
  /** Runs a registered script atomically; every key must share one hash slot. */
  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply>;
  /** Runs several scripts, each atomic on its own slot, in one round trip where the adapter can. */
  runMany(calls: ScriptCall[]): Promise<RedisReply[]>;
  /** Redis TIME in milliseconds. */
  timeMs(): Promise<number>;
  get(key: string): Promise<string | null>;
  hgetall(key: string): Promise<Record<string, string>>;
  hget(key: string, field: string): Promise<string | null>;
  smembers(key: string): Promise<string[]>;
  /** Releases connections; the port is unusable afterwards. */
  close(): Promise<void>;
}

export interface ScriptCall {
  script: LuaScript;
  keys: string[];
  args: (string | number)[];
}

/** True when a Redis error says the script cache does not hold the SHA. */
export function isNoScript(err: unknown): boolean {
  return err instanceof Error && /NOSCRIPT/i.test(err.message);
}

/** Redis TIME's [seconds, microseconds] as milliseconds. */
export function timeReplyToMs(reply: readonly (string | number)[]): number {
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}
