import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * page-in-placeholder: after Redis lost its placements, writes an ownerless placeholder row for
 * a durable instance (epoch absent, hostname = resurrection target) and lists it on the
 * overwritten hash, so the durability sweep places and wakes it. An existing row is left alone.
 *
 * KEYS[1] placements    hash id → row
 * KEYS[2] overwritten   hash env \n ns \n id → epoch
 * KEYS[3] spaces        set of env \n ns
 * ARGV[1] id
 * ARGV[2] hostname ("" in single mode)
 * ARGV[3] overwritten field env \n ns \n id
 * ARGV[4] spaces member env \n ns
 *
 * Returns 1 when a placeholder was written, else 0.
 */
const LUA = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '\\n\\n\\n' .. ARGV[2] .. '\\n')
redis.call('HSETNX', KEYS[2], ARGV[3], '0')
redis.call('SADD', KEYS[3], ARGV[4])
return 1
`;

export const pageInPlaceholderScript = defineScript(
  "page-in-placeholder",
  LUA,
  "b9d2c0dfc834b2552e285ce21158b04c4b52a3fe",
);

export interface PageInPlaceholderInput {
  bucket: number;
  env: string;
  ns: string;
  id: string;
  /** The resurrection target, "" in single mode. */
  hostname: string;
}

/** True when a placeholder was written. */
export async function pageInPlaceholder(redis: RedisPort, keys: Keys, input: PageInPlaceholderInput): Promise<boolean> {
  const { bucket, env, ns, id } = input;
  const reply = await redis.run(
    pageInPlaceholderScript,
    [keys.placements(bucket, env, ns), keys.overwritten(bucket), keys.spaces(bucket)],
    [id, input.hostname, `${env}\n${ns}\n${id}`, `${env}\n${ns}`],
  );
  return Number(reply) === 1;
}
