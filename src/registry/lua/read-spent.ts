import type { Keys } from "../../redis/keys.ts";
import { pairs, type RedisReply, type ScriptCall } from "../../redis/port.ts";
import { readSpentScriptCall } from "./scripts.generated.ts";

export interface ReadSpentInput {
  bucket: number;
}

/** One bucket's spent counts (lua/read-spent-1.lua), a script so that every bucket's read pipelines. */
export function readSpentCall(keys: Keys, input: ReadSpentInput): ScriptCall {
  return readSpentScriptCall({ spent: keys.spent(input.bucket) });
}

/** sessionId → `headroomRev \n count`. */
export function parseReadSpent(reply: RedisReply): Record<string, string> {
  return pairs(Array.isArray(reply) ? reply : []);
}
