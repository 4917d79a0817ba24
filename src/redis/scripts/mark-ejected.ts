import { defineScript } from "../script.ts";
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

export const markEjected = defineScript("mark-ejected", LUA, "0f0b77f876b26fc9dc4ebb82d7cef03e12394e47");
