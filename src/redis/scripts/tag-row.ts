import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_ROW } from "./lua-lib.ts";

/**
 * tag-row: compare-and-set of a placement's owner tag, written only while the row's sessionId
 * matches and its epoch equals the quoted one.
 *
 * KEYS[1] placements   hash id → row
 * ARGV[1] sessionId
 * ARGV[2] id
 * ARGV[3] quoted epoch (digits)
 * ARGV[4] tag
 *
 * Returns 1 when tagged, else 0.
 */
const LUA = `${LUA_ROW}
local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return 0 end
local row = row_decode(raw)
if row.sid ~= ARGV[1] or row.epoch ~= ARGV[3] then return 0 end
row.tag = ARGV[4]
redis.call('HSET', KEYS[1], ARGV[2], row_encode(row))
return 1
`;

export const tagRowScript = defineScript("tag-row", LUA, "17ef9ed0535858ae01d6720d014b59e16262666c");

export interface TagRowInput {
  bucket: number;
  env: string;
  ns: string;
  sessionId: string;
  id: string;
  /** The quoted epoch (digits). */
  epoch: string;
  tag: string;
}

/** True when the row was tagged. */
export async function tagRow(redis: RedisPort, keys: Keys, input: TagRowInput): Promise<boolean> {
  const { bucket, env, ns } = input;
  return (
    Number(
      await redis.run(
        tagRowScript,
        [keys.placements(bucket, env, ns)],
        [input.sessionId, input.id, input.epoch, input.tag],
      ),
    ) === 1
  );
}
