import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import { pairs, type RedisReply, type ScriptCall } from "../port.ts";

/**
 * read-spent: one bucket's spent counts (keys.ts `spent`), for the reads that subtract them from
 * the records' headroom. Writes nothing. A script rather than HGETALL so that the reads of every
 * bucket go out as one pipeline (one subrequest on Upstash, one round trip per cluster node).
 *
 * KEYS[1] spent   hash sessionId → headroomRev \n new placements in the bucket since
 *
 * Returns {sessionId, headroomRev \n count, …}.
 */
const LUA = `
return redis.call('HGETALL', KEYS[1])
`;

export const readSpentScript = defineScript("read-spent", LUA, "423b4826276301a30ff4871d689d0eeed4e3c81f");

export interface ReadSpentInput {
  bucket: number;
}

export function readSpentCall(keys: Keys, input: ReadSpentInput): ScriptCall {
  return { script: readSpentScript, keys: [keys.spent(input.bucket)], args: [] };
}

/** sessionId → `headroomRev \n count`. */
export function parseReadSpent(reply: RedisReply): Record<string, string> {
  return pairs(Array.isArray(reply) ? reply : []);
}
