import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * clear-overwritten: after a 2xx from a forward, drops the id's overwritten marker when it is at
 * or below the served epoch (the instance is evidently back at that epoch or later).
 *
 * KEYS[1] overwritten   hash env \n ns \n id → epoch
 * ARGV[1] field env \n ns \n id
 * ARGV[2] served epoch
 *
 * Returns 1 when the marker was cleared, else 0.
 */
const LUA = `
local marker = redis.call('HGET', KEYS[1], ARGV[1])
if not marker or tonumber(marker) > tonumber(ARGV[2]) then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
`;

export const clearOverwrittenScript = defineScript(
  "clear-overwritten",
  LUA,
  "4b446825c8e19c169ce699f234b0c30d0497797b",
);

export interface ClearOverwrittenInput {
  bucket: number;
  env: string;
  ns: string;
  id: string;
  /** The epoch the instance served at. */
  epoch: string;
}

/** True when the marker was cleared. */
export async function clearOverwritten(redis: RedisPort, keys: Keys, input: ClearOverwrittenInput): Promise<boolean> {
  const { bucket, env, ns, id, epoch } = input;
  return (
    Number(await redis.run(clearOverwrittenScript, [keys.overwritten(bucket)], [`${env}\n${ns}\n${id}`, epoch])) === 1
  );
}
