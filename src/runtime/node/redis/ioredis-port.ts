import { Cluster, type Redis } from "ioredis";
import { evalScript, type LuaScript } from "../../../contract/lua-script.ts";
import { pairList, type RedisReply, timeReplyToMs, withScores } from "../../../redis/port.ts";
import type { TcpPort } from "./tcp.ts";
import { TurnCork } from "./turn-cork.ts";

/** Runs one command under a bound of its own (the cluster's deadline), or as it is. */
export type CommandBound = <T>(command: () => Promise<T>) => Promise<T>;

/**
 * The RedisPort of one Redis server or of a Redis Cluster, over an ioredis client configured by
 * ioredis-clients.ts (which is where the client's promise never to send a command twice is kept).
 * On a cluster each command goes to the primary of its keys' slot.
 */
export class IoredisPort implements TcpPort {
  /** One server's scripts of a turn in one write (a Cluster's commands go to many connections). */
  private readonly cork: TurnCork | undefined;

  constructor(
    private readonly client: Redis | Cluster,
    private readonly bound?: CommandBound,
  ) {
    this.cork = client instanceof Cluster ? undefined : new TurnCork();
  }

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    this.cork?.hold((this.client as Redis).stream);
    const run = () =>
      evalScript(
        script,
        (sha) => this.client.evalsha(sha, keys.length, ...keys, ...args) as Promise<RedisReply>,
        (source) => this.client.eval(source, keys.length, ...keys, ...args) as Promise<RedisReply>,
      );
    return this.bound ? this.bound(run) : run();
  }

  timeMs(): Promise<number> {
    const client = this.client;
    return this.within(async () =>
      timeReplyToMs(await (client instanceof Cluster ? client.nodes("master")[0]!.time() : client.time())),
    );
  }

  get(key: string): Promise<string | null> {
    return this.within(() => this.client.get(key));
  }

  async set(key: string, value: string): Promise<void> {
    await this.within(() => this.client.set(key, value));
  }

  hgetall(key: string): Promise<Record<string, string>> {
    return this.within(() => this.client.hgetall(key));
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.within(() => this.client.hget(key, field));
  }
  async hmget(key: string, fields: string[]): Promise<(string | null)[]> {
    if (fields.length === 0) return [];
    return this.within(() => this.client.hmget(key, ...fields));
  }

  smembers(key: string): Promise<string[]> {
    return this.within(() => this.client.smembers(key));
  }

  hscan(key: string, cursor: string, count: number, match?: string): Promise<[string, Array<[string, string]>]> {
    return this.within(async () => {
      const [next, flat] =
        match === undefined
          ? await this.client.hscan(key, cursor, "COUNT", count)
          : await this.client.hscan(key, cursor, "MATCH", match, "COUNT", count);
      return [next, pairList(flat)];
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

  private within<T>(command: () => Promise<T>): Promise<T> {
    return this.bound ? this.bound(command) : command();
  }
}
