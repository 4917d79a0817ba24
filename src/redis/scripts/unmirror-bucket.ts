import { defineScript } from "../script.ts";
import { LUA_PAIR } from "./lua-lib.ts";

/**
 * unmirror-bucket: removes a dropped session (deregistered, voided, superseded) from one bucket
 * and leaves a tombstone in the client map so that a heartbeat still in flight cannot mirror it
 * back. A later registration of the client carries a higher generation and replaces the tombstone.
 *
 * KEYS[1]       workers   hash sessionId → record JSON
 * KEYS[2]       clients   hash clientId → sessionId \n generation
 * KEYS[3 …]     namespace lists of the session
 * ARGV[1] sessionId
 * ARGV[2] clientId
 * ARGV[3] tombstone generation
 *
 * Returns 1 when the bucket held the session, else 0.
 */
const LUA = `${LUA_PAIR}
local sid, client, gen = ARGV[1], ARGV[2], ARGV[3]
local held = redis.call('HDEL', KEYS[1], sid)
for i = 3, #KEYS do redis.call('HDEL', KEYS[i], sid) end
local cur = redis.call('HGET', KEYS[2], client)
if not cur or pair(cur) == sid then redis.call('HSET', KEYS[2], client, '\\n' .. gen) end
return held
`;

export const unmirrorBucket = defineScript("unmirror-bucket", LUA, "98c91de947904a1cf8a8ac7b197c3514cf423f29");
