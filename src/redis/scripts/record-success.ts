import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * record-success: a forward that did not fail breaks the worker's run of consecutive failures
 * (its ejection count stays, so a relapse is ejected for longer).
 *
 * KEYS[1] outliers   hash sessionId → consecutive \n ejections \n ejected-until ms
 * ARGV[1] sessionId
 *
 * Returns 1 when a run was reset, else 0.
 */
const LUA = `
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.sub(cur, 1, 2) == '0\\n' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '0' .. string.sub(cur, (string.find(cur, '\\n', 1, true))))
return 1
`;

export const recordSuccessScript = defineScript("record-success", LUA, "850e0c446504884a6203efcf72b9262a20d7e037");

export interface RecordSuccessInput {
  sessionId: string;
}

/** True when a run of failures was reset. */
export async function recordSuccess(redis: RedisPort, keys: Keys, input: RecordSuccessInput): Promise<boolean> {
  return Number(await redis.run(recordSuccessScript, [keys.outliers], [input.sessionId])) === 1;
}
