import { Redis } from "@upstash/redis/cloudflare";
import { evalScript, type LuaScript } from "../../contract/lua-script.ts";
import {
  pairList,
  pairs,
  type RedisPort,
  type RedisReply,
  type ScriptCall,
  timeReplyToMs,
  withScores,
} from "../port.ts";
import type { RequestMeter } from "../request-meter.ts";
import { type BatchedCommand, REST_MAX_REQUEST_BYTES, RestBatcher } from "./upstash-batch.ts";

export interface UpstashRedisOptions {
  url: string;
  token: string;
  /** The largest POST body to send (REST_MAX_REQUEST_BYTES by default). */
  maxRequestBytes?: number;
  /**
   * How long one HTTP request (a pipeline, the client's own retries included) may take before it
   * is aborted and its commands fail as RedisUnavailableError (PINBOARD_REDIS_TIMEOUT_MS).
   */
  timeoutMs: number;
}

/**
 * The Workers entry's Redis adapter: @upstash/redis over HTTP with automatic deserialization
 * off (so "123" stays a string). Every command, reads included, goes through one RestBatcher:
 * the commands of one event-loop turn share POST /pipeline requests, each under the REST
 * endpoint's request-size limit (upstash-batch.ts), and a failure surfaces as
 * RedisUnavailableError or a reply error with a redacted message (upstash-errors.ts), never as
 * the client's own error, whose message carries the whole pipeline.
 */
export class UpstashRedis implements RedisPort {
  readonly client: Redis;
  private readonly batch: RestBatcher;

  constructor(
    private readonly options: UpstashRedisOptions,
    meter?: RequestMeter,
  ) {
    this.client = new Redis({
      url: options.url,
      token: options.token,
      automaticDeserialization: false,
      enableTelemetry: false,
      // The batcher pipelines (with a size budget the client's own auto-pipelining lacks).
      enableAutoPipelining: false,
      // A function: the client calls it once per request, so every request gets its own deadline,
      // and an abort is thrown (a plain signal would be answered with a fake `{"result":"Aborted"}`).
      signal: () => AbortSignal.timeout(options.timeoutMs),
      // Metered, each HTTP request is one fetch: the client's own retries would be uncounted subrequests.
      ...(meter ? { retry: { retries: 0 } } : {}),
    });
    this.batch = new RestBatcher(this.client, options.maxRequestBytes ?? REST_MAX_REQUEST_BYTES, meter);
  }

  /** A client of its own whose every HTTP request (one fetch, no retries) first draws from `meter`. */
  metered(meter: RequestMeter): RedisPort {
    return new UpstashRedis(this.options, meter);
  }

  private send<T>(command: BatchedCommand): Promise<T> {
    return this.batch.send(command) as Promise<T>;
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    const argv = args.map(String);
    return evalScript(
      script,
      (sha) =>
        this.send<RedisReply>({
          wire: ["evalsha", sha, keys.length, ...keys, ...argv],
          add: (p) => p.evalsha(sha, keys, argv),
        }),
      (source) =>
        this.send<RedisReply>({
          wire: ["eval", source, keys.length, ...keys, ...argv],
          add: (p) => p.eval(source, keys, argv),
        }),
    );
  }

  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return Promise.all(calls.map((c) => this.run(c.script, c.keys, c.args)));
  }

  async timeMs(): Promise<number> {
    return timeReplyToMs(await this.send<[string, string]>({ wire: ["time"], add: (p) => p.time() }));
  }

  get(key: string): Promise<string | null> {
    return this.send<string | null>({ wire: ["get", key], add: (p) => p.get(key) });
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    // With deserialization off the client hands back Redis' flat [field, value, …] reply
    // (its own pairing lives in the deserializer), and [] for a missing key.
    const reply = await this.send<unknown>({ wire: ["hgetall", key], add: (p) => p.hgetall(key) });
    return Array.isArray(reply) ? pairs(reply) : {};
  }

  async set(key: string, value: string): Promise<void> {
    await this.send({ wire: ["set", key, value], add: (p) => p.set(key, value) });
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.send<string | null>({ wire: ["hget", key, field], add: (p) => p.hget(key, field) });
  }

  async hmget(key: string, fields: string[]): Promise<(string | null)[]> {
    if (fields.length === 0) return [];
    // With deserialization off the client hands back Redis' reply: one value or nil per field.
    const reply = await this.send<unknown[] | null>({
      wire: ["hmget", key, ...fields],
      add: (p) => p.hmget(key, ...fields),
    });
    return fields.map((_, i) => (reply?.[i] === null || reply?.[i] === undefined ? null : String(reply[i])));
  }

  async smembers(key: string): Promise<string[]> {
    return (await this.send<unknown[]>({ wire: ["smembers", key], add: (p) => p.smembers(key) })).map(String);
  }

  async hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]> {
    const [next, flat] = await this.send<[string | number, unknown[]]>(
      match === undefined
        ? { wire: ["hscan", key, cursor, "count", count], add: (p) => p.hscan(key, cursor, { count }) }
        : {
            wire: ["hscan", key, cursor, "match", match, "count", count],
            add: (p) => p.hscan(key, cursor, { match, count }),
          },
    );
    return [String(next), pairList(flat)];
  }

  async zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    if (members.length === 0) return [];
    const scores = await this.send<unknown[] | null>({
      wire: ["zmscore", key, ...members],
      add: (p) => p.zmscore(key, members),
    });
    return members.map((_, i) => (scores?.[i] === null || scores?.[i] === undefined ? null : Number(scores[i])));
  }

  async zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    const flat = await this.send<unknown[]>({
      wire: ["zrange", key, min, max, "byscore", "limit", 0, limit, "withscores"],
      add: (p) => p.zrange(key, min, max, { byScore: true, withScores: true, offset: 0, count: limit }),
    });
    return withScores(flat);
  }

  async close(): Promise<void> {}
}
