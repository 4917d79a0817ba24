import { Redis } from "@upstash/redis/cloudflare";
import { pairs, timeReplyToMs, withScores, type RedisPort, type RedisReply, type ScriptCall } from "./port.ts";
import { evalScript, type LuaScript } from "../contract/lua-script.ts";

export interface UpstashRedisOptions {
  url: string;
  token: string;
}

/**
 * The Workers entry's Redis adapter: @upstash/redis over HTTP with automatic deserialization
 * off (so "123" stays a string). The client auto-pipelines: concurrent calls share one
 * POST /pipeline.
 */
export class UpstashRedis implements RedisPort {
  readonly client: Redis;

  constructor(options: UpstashRedisOptions) {
    this.client = new Redis({
      url: options.url,
      token: options.token,
      automaticDeserialization: false,
      enableTelemetry: false,
    });
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    const argv = args.map(String);
    return evalScript(
      script,
      (sha) => this.client.evalsha(sha, keys, argv) as Promise<RedisReply>,
      (source) => this.client.eval(source, keys, argv) as Promise<RedisReply>,
    );
  }

  runMany(calls: ScriptCall[]): Promise<RedisReply[]> {
    return Promise.all(calls.map((c) => this.run(c.script, c.keys, c.args)));
  }

  async timeMs(): Promise<number> {
    return timeReplyToMs(await this.client.time());
  }

  get(key: string): Promise<string | null> {
    return this.client.get<string>(key);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    // With deserialization off the client hands back Redis' flat [field, value, …] reply
    // (its own pairing lives in the deserializer), and [] for a missing key.
    const reply: unknown = await this.client.hgetall(key);
    return Array.isArray(reply) ? pairs(reply) : {};
  }

  async set(key: string, value: string): Promise<void> {
    await this.client.set(key, value);
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.client.hget<string>(key, field);
  }

  async smembers(key: string): Promise<string[]> {
    return ((await this.client.smembers(key)) as unknown[]).map(String);
  }

  async hscan(key: string, cursor: string, count: number): Promise<[string, Record<string, string>]> {
    const [next, flat] = (await this.client.hscan(key, cursor, { count })) as [string | number, unknown[]];
    return [String(next), pairs(flat)];
  }

  async zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    if (members.length === 0) return [];
    const scores = (await this.client.zmscore(key, members)) as unknown[] | null;
    return members.map((_, i) => (scores?.[i] === null || scores?.[i] === undefined ? null : Number(scores[i])));
  }

  async zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    const flat = (await this.client.zrange(key, min, max, { byScore: true, withScores: true, offset: 0, count: limit })) as unknown[];
    return withScores(flat);
  }

  async close(): Promise<void> {}
}
