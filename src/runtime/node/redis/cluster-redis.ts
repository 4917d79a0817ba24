import type { Cluster } from "ioredis";
import { evalScript, type LuaScript } from "../../../contract/lua-script.ts";
import { pairs, type RedisReply, timeReplyToMs, withScores } from "../../../redis/port.ts";
import type { TcpPort } from "./tcp.ts";

/**
 * The RedisPort of a Redis Cluster (REDIS_CLUSTER_NODES) over ioredis, which follows MOVED and ASK
 * redirections and refreshes the slot map; each command goes to the primary of its keys' slot.
 */
export class ClusterRedis implements TcpPort {
  constructor(
    private readonly client: Cluster,
    private readonly timeoutMs: number,
  ) {}

  /**
   * A Cluster holds commands in its offline queue while no node answers, where the per-node
   * commandTimeout does not reach them: give every cluster command the same deadline, so a
   * cluster that is down is a bounded failure (503) rather than a hang. Like any timeout, the
   * command may still run once the cluster is back.
   */
  private within<T>(command: () => Promise<T>): Promise<T> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`Redis Cluster did not answer within ${this.timeoutMs} ms`)),
        this.timeoutMs,
      );
    });
    return Promise.race([command(), deadline]).finally(() => clearTimeout(timer));
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    return this.within(() =>
      evalScript(
        script,
        (sha) => this.client.evalsha(sha, keys.length, ...keys, ...args) as Promise<RedisReply>,
        (source) => this.client.eval(source, keys.length, ...keys, ...args) as Promise<RedisReply>,
      ),
    );
  }

  timeMs(): Promise<number> {
    return this.within(async () => timeReplyToMs(await this.client.nodes("master")[0]!.time()));
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
    return this.within(async () =>
      (await this.client.zmscore(key, ...members)).map((s) => (s === null ? null : Number(s))),
    );
  }

  zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return this.within(async () =>
      withScores(await this.client.zrangebyscore(key, min, max, "WITHSCORES", "LIMIT", 0, limit)),
    );
  }

  async close(): Promise<void> {
    try {
      await this.client.quit();
    } catch {
      this.client.disconnect();
    }
  }
}
