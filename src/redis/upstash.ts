import { Redis } from "@upstash/redis/cloudflare";
import { isNoScript, timeReplyToMs, type RedisPort, type RedisReply, type ScriptCall } from "./port.ts";
import type { LuaScript } from "./script.ts";

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

  async run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    const argv = args.map(String);
    try {
      return (await this.client.evalsha(script.sha, keys, argv)) as RedisReply;
    } catch (err) {
      if (!isNoScript(err)) throw err;
      return (await this.client.eval(script.script, keys, argv)) as RedisReply;
    }
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
    const record: Record<string, string> = {};
    if (!Array.isArray(reply)) return record;
    for (let i = 0; i + 1 < reply.length; i += 2) {
      // defineProperty, so a field named "__proto__" is a field, not a prototype.
      Object.defineProperty(record, String(reply[i]), {
        value: String(reply[i + 1]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return record;
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.client.hget<string>(key, field);
  }

  async smembers(key: string): Promise<string[]> {
    return ((await this.client.smembers(key)) as unknown[]).map(String);
  }

  async close(): Promise<void> {}
}
