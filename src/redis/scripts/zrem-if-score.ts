import { defineScript } from "../../contract/lua-script.ts";
import type { RedisPort } from "../port.ts";

/**
 * zrem-if-score: removes a sorted-set member only while its score is still the one read, so a
 * stale due-alarm entry goes but one rescheduled meanwhile stays.
 *
 * KEYS[1] sorted set
 * ARGV[1] member
 * ARGV[2] score as read
 *
 * Returns 1 when removed, else 0.
 */
const LUA = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
`;

export const zremIfScoreScript = defineScript("zrem-if-score", LUA, "5b3f34abe5ab31b0071862a3869543726cfbe015");

export interface ZremIfScoreInput {
  /** The sorted set (not one of keys.ts: the durability index's due alarms, say). */
  key: string;
  member: string;
  /** The score as read. */
  score: number;
}

/** True when the member was removed. */
export async function zremIfScore(redis: RedisPort, input: ZremIfScoreInput): Promise<boolean> {
  return Number(await redis.run(zremIfScoreScript, [input.key], [input.member, input.score])) === 1;
}
