import { evalScript, type LuaScript } from "../../../contract/lua-script.ts";
import { pairs, type RedisReply, timeReplyToMs, withScores } from "../../../redis/port.ts";
import type { RespValue } from "./resp-codec.ts";
import type { RespConnection } from "./resp-connection.ts";
import type { TcpPort } from "./tcp.ts";

/**
 * The RedisPort of one Redis server (REDIS_URL) over Pinboard's own pipelined connection
 * (resp-connection.ts): every command is one array of arguments, and concurrent commands share the
 * connection without waiting for each other, so the bucket fan-out of a heartbeat costs about one
 * round trip.
 */
export class ServerRedis implements TcpPort {
  constructor(private readonly connection: RespConnection) {}

  run(script: LuaScript, keys: string[], args: (string | number)[]): Promise<RedisReply> {
    return evalScript(
      script,
      (sha) => this.connection.send(scriptCommand("EVALSHA", sha, keys, args)) as Promise<RedisReply>,
      (source) => this.connection.send(scriptCommand("EVAL", source, keys, args)) as Promise<RedisReply>,
    );
  }

  async timeMs(): Promise<number> {
    return timeReplyToMs((await this.connection.send(["TIME"])) as string[]);
  }

  get(key: string): Promise<string | null> {
    return this.connection.send(["GET", key]) as Promise<string | null>;
  }

  async set(key: string, value: string): Promise<void> {
    await this.connection.send(["SET", key, value]);
  }

  async hgetall(key: string): Promise<Record<string, string>> {
    return pairs((await this.connection.send(["HGETALL", key])) as RespValue[]);
  }

  hget(key: string, field: string): Promise<string | null> {
    return this.connection.send(["HGET", key, field]) as Promise<string | null>;
  }

  smembers(key: string): Promise<string[]> {
    return this.connection.send(["SMEMBERS", key]) as Promise<string[]>;
  }

  async hscan(key: string, cursor: string, count: number): Promise<[string, Record<string, string>]> {
    const [next, flat] = (await this.connection.send(["HSCAN", key, cursor, "COUNT", count])) as [string, string[]];
    return [next, pairs(flat)];
  }

  async zmscore(key: string, members: string[]): Promise<(number | null)[]> {
    if (members.length === 0) return [];
    const scores = (await this.connection.send(["ZMSCORE", key, ...members])) as (string | null)[];
    return scores.map((s) => (s === null ? null : Number(s)));
  }

  async zrangeByScore(key: string, min: number | "-inf", max: number, limit: number): Promise<Array<[string, number]>> {
    return withScores(
      (await this.connection.send(["ZRANGEBYSCORE", key, min, max, "WITHSCORES", "LIMIT", 0, limit])) as string[],
    );
  }

  close(): Promise<void> {
    return this.connection.close();
  }
}

/** EVALSHA / EVAL's arguments in one array, without the spreads of building it piecewise. */
function scriptCommand(
  name: "EVALSHA" | "EVAL",
  shaOrSource: string,
  keys: string[],
  args: (string | number)[],
): (string | number)[] {
  const command: (string | number)[] = new Array(3 + keys.length + args.length);
  command[0] = name;
  command[1] = shaOrSource;
  command[2] = keys.length;
  for (let i = 0; i < keys.length; i++) command[3 + i] = keys[i]!;
  for (let i = 0; i < args.length; i++) command[3 + keys.length + i] = args[i]!;
  return command;
}
