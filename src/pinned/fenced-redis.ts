import type { Cluster, Redis } from "ioredis";
import { evalScript } from "../contract/lua-script.ts";
import { StaleEpochError } from "./durability.ts";
import { fencedWriteScript } from "./lua/scripts.generated.ts";
import { ownRedisConnection } from "./redis-connection.ts";

/**
 * The placement epoch as a fencing token for a database of your own. Pinboard hands each
 * activation an epoch (`ctx.epoch`) that only grows for an instance; an owner Pinboard has moved
 * away from (a paused process, a partitioned host) still holds its older one. A write that carries
 * its epoch and is refused when a newer epoch has written the same key can never undo the new
 * owner's work, whatever the old owner believes.
 *
 * For Redis, FencedRedis does it in one script per write: the key's fence (the highest epoch that
 * wrote it) sits beside it in the same hash slot, so it works on a Redis Cluster too. For SQL, keep
 * a `fence` column and write `UPDATE t SET …, fence = $epoch WHERE id = $id AND fence <= $epoch`
 * (numeric(20) or bigint: epochs are decimal strings below 2^63); zero rows updated means a newer
 * owner wrote it: stop (docs/worker-library.md).
 */

/** The writes a fence can guard, with their arguments after the key. */
export type FencedCommand =
  | ["SET", string]
  | ["RPUSH", string, ...string[]]
  | ["HSET", string, string, ...string[]]
  | ["INCRBY", string]
  | ["DEL"];

const COMMANDS = new Set(["SET", "RPUSH", "HSET", "INCRBY", "DEL"]);

export interface FencedRedisOptions {
  /** A connected ioredis client (single node or Cluster), or a redis:// URL to connect to. */
  redis: Redis | Cluster | string;
  /** With a URL: how long one write may take before it fails (default 5000 ms). */
  commandTimeoutMs?: number;
}

/** Where the fence of `key` lives: a hash beside it, in the key's hash slot. */
export function fenceKeyOf(key: string): string {
  const open = key.indexOf("{");
  const close = open < 0 ? -1 : key.indexOf("}", open + 1);
  // Redis hashes the first {…} with something in it; a key without one is hashed whole.
  if (close > open + 1) return `pinned-fence:${key}`;
  if (key.includes("}"))
    throw new TypeError(`FencedRedis: cannot keep the fence of ${JSON.stringify(key)} in its slot`);
  return `pinned-fence:{${key}}`;
}

export class FencedRedis {
  readonly client: Redis | Cluster;
  private readonly owned: boolean;

  constructor(options: FencedRedisOptions) {
    this.owned = typeof options.redis === "string";
    this.client =
      typeof options.redis === "string" ? ownRedisConnection(options.redis, options.commandTimeoutMs) : options.redis;
  }

  /**
   * Runs `command` on `key` when no newer epoch than `epoch` has written it, and records `epoch`
   * as its fence; resolves to the command's reply. A newer epoch rejects with StaleEpochError
   * (`stored` is the fence) and changes nothing: the caller has lost the instance.
   */
  async write(key: string, epoch: string, command: FencedCommand): Promise<unknown> {
    if (!/^\d+$/.test(epoch)) throw new TypeError(`FencedRedis: epoch must be a decimal string, got ${epoch}`);
    if (!COMMANDS.has(command[0])) throw new TypeError(`FencedRedis: unsupported command ${String(command[0])}`);
    const keys = [fenceKeyOf(key), key];
    const args = [epoch, ...command];
    const reply = (await evalScript<unknown[]>(
      fencedWriteScript,
      (sha) => this.client.evalsha(sha, keys.length, ...keys, ...args) as Promise<unknown[]>,
      (source) => this.client.eval(source, keys.length, ...keys, ...args) as Promise<unknown[]>,
    )) as [number, unknown];
    if (reply[0] === 0) throw new StaleEpochError(epoch, String(reply[1]));
    return reply[1];
  }

  /** The highest epoch that wrote `key` through a fence, or null. */
  async fence(key: string): Promise<string | null> {
    return this.client.hget(fenceKeyOf(key), "epoch");
  }

  /** Closes the connection when this object opened it. */
  async close(): Promise<void> {
    if (this.owned) await this.client.quit().catch(() => undefined);
  }
}
