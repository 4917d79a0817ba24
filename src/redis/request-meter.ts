import type { LuaScript } from "../contract/lua-script.ts";
import type { RedisPort, RedisReply, ScriptCall } from "./port.ts";

/**
 * Counts the requests a port sends to its server, and may refuse one: `take` is called before
 * each request goes out and throws RequestBudgetSpent to keep it from going.
 */
export interface RequestMeter {
  take(): void;
}

/** A metered port refused a request: the budget it draws from is spent. Nothing was sent. */
export class RequestBudgetSpent extends Error {
  constructor(limit: number) {
    super(`request budget of ${limit} spent`);
    this.name = "RequestBudgetSpent";
  }
}

/**
 * A view of `port` whose requests draw from `meter`: the port's own exact view where it has one
 * (the REST adapter meters each HTTP request it sends, a pipeline counted once), else this
 * module's per-call count (every call one round trip, a runMany one).
 */
export function meteredPort(port: RedisPort, meter: RequestMeter): RedisPort {
  return port.metered?.(meter) ?? new MeteredRedis(port, meter);
}

/** Counts every call of a port as one request, before it is made. */
export class MeteredRedis implements RedisPort {
  constructor(
    private readonly inner: RedisPort,
    private readonly meter: RequestMeter,
  ) {}

  private draw<T>(work: () => Promise<T>): Promise<T> {
    try {
      this.meter.take();
    } catch (err) {
      return Promise.reject(err);
    }
    return work();
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    return this.draw(() => this.inner.run(script, keys, args));
  }
  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return this.draw(() => this.inner.runMany(calls));
  }
  timeMs(): Promise<number> {
    return this.draw(() => this.inner.timeMs());
  }
  get(key: string): Promise<string | null> {
    return this.draw(() => this.inner.get(key));
  }
  set(key: string, value: string): Promise<void> {
    return this.draw(() => this.inner.set(key, value));
  }
  hgetall(key: string): Promise<Record<string, string>> {
    return this.draw(() => this.inner.hgetall(key));
  }
  hget(key: string, field: string): Promise<string | null> {
    return this.draw(() => this.inner.hget(key, field));
  }
  hmget(key: string, fields: string[]): Promise<(string | null)[]> {
    return this.draw(() => this.inner.hmget(key, fields));
  }
  smembers(key: string): Promise<string[]> {
    return this.draw(() => this.inner.smembers(key));
  }
  hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]> {
    return this.draw(() => this.inner.hscan(key, cursor, count, match));
  }
  zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    return this.draw(() => this.inner.zmscore(key, members));
  }
  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return this.draw(() => this.inner.zrangeByScore(key, min, max, limit));
  }
  close(): Promise<void> {
    return Promise.resolve();
  }
}
