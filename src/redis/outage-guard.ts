import type { LuaScript } from "../contract/lua-script.ts";
import type { RedisPort, RedisReply, ScriptCall } from "./port.ts";
import { RedisReplyError, RedisUnavailableError, redisErrorText } from "./redis-errors.ts";
import { meteredPort, RequestBudgetSpent, type RequestMeter } from "./request-meter.ts";

/** Redis answered, but with a state it is in rather than a fault of the command: retry later. */
const TRANSIENT_REPLY = /^(LOADING|BUSY|CLUSTERDOWN|TRYAGAIN|MASTERDOWN|READONLY)\b/;

/**
 * A reply error (the TCP client's ReplyError, the REST adapter's RedisReplyError, a raw
 * UpstashError) means Redis ran the command and refused it: a bug worth a 500. Anything else — a
 * closed connection, a timeout, a failed fetch, a cluster without a primary — means Redis is
 * unavailable. (The REST adapter itself turns the endpoint's own failures — 401/403/413/5xx,
 * WRONGPASS — into RedisUnavailableError: src/redis/rest/upstash-errors.ts.)
 */
export function isUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return true;
  if (err instanceof RedisUnavailableError) return true;
  const replied = err.name === "ReplyError" || err.name === "UpstashError";
  return !replied || TRANSIENT_REPLY.test(err.message);
}

/**
 * What RedisOutageGuard lets through: RedisUnavailableError (answered 503), or a RedisReplyError
 * (answered 500); both with the redacted message only, so no caller can log a command's arguments.
 * A metered view's RequestBudgetSpent passes as it is: nothing was sent, Redis is not at fault.
 */
function asOutageOrReply(err: unknown): Error {
  if (err instanceof RedisUnavailableError || err instanceof RequestBudgetSpent) return err;
  if (isUnavailable(err)) return new RedisUnavailableError(err);
  return err instanceof RedisReplyError ? err : new RedisReplyError(redisErrorText(err));
}

/**
 * Wraps a Redis port so that every transport failure surfaces as RedisUnavailableError, which
 * the error handler answers with 503 and Retry-After instead of a 500, and every other Redis
 * error as a RedisReplyError with a redacted message.
 */
export class RedisOutageGuard implements RedisPort {
  constructor(readonly inner: RedisPort) {}

  private guard<T>(work: () => Promise<T>): Promise<T> {
    let pending: Promise<T>;
    try {
      pending = work();
    } catch (err) {
      return Promise.reject(asOutageOrReply(err));
    }
    return pending.catch((err: unknown) => Promise.reject(asOutageOrReply(err)));
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    return this.guard(() => this.inner.run(script, keys, args));
  }
  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return this.guard(() => this.inner.runMany(calls));
  }
  timeMs(): Promise<number> {
    return this.guard(() => this.inner.timeMs());
  }
  get(key: string): Promise<string | null> {
    return this.guard(() => this.inner.get(key));
  }
  set(key: string, value: string): Promise<void> {
    return this.guard(() => this.inner.set(key, value));
  }
  hgetall(key: string): Promise<Record<string, string>> {
    return this.guard(() => this.inner.hgetall(key));
  }
  hget(key: string, field: string): Promise<string | null> {
    return this.guard(() => this.inner.hget(key, field));
  }
  hmget(key: string, fields: string[]): Promise<(string | null)[]> {
    return this.guard(() => this.inner.hmget(key, fields));
  }
  smembers(key: string): Promise<string[]> {
    return this.guard(() => this.inner.smembers(key));
  }
  hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]> {
    return this.guard(() => this.inner.hscan(key, cursor, count, match));
  }
  zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    return this.guard(() => this.inner.zmscore(key, members));
  }

  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return this.guard(() => this.inner.zrangeByScore(key, min, max, limit));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  metered(meter: RequestMeter): RedisPort {
    return new RedisOutageGuard(meteredPort(this.inner, meter));
  }
}
