import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { ScriptCall } from "../port.ts";
import { LUA_NOW } from "./lua-lib.ts";

/**
 * mark-ejected: mirrors an ejection into one bucket, where the resolve script reads it, and
 * drops the bucket's ejections that have run out.
 *
 * KEYS[1] ejected   hash sessionId → ejected-until ms
 * ARGV[1] sessionId
 * ARGV[2] ejected-until ms
 *
 * Returns 1.
 */
const LUA = `${LUA_NOW}
local now = now_ms()
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) <= now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

export const markEjectedScript = defineScript("mark-ejected", LUA, "0f0b77f876b26fc9dc4ebb82d7cef03e12394e47");

export interface MarkEjectedInput {
  bucket: number;
  sessionId: string;
  /** Ejected until (ms). */
  until: number;
}

export function markEjectedCall(keys: Keys, input: MarkEjectedInput): ScriptCall {
  return { script: markEjectedScript, keys: [keys.ejected(input.bucket)], args: [input.sessionId, input.until] };
}
