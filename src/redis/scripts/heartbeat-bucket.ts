import { defineScript } from "../script.ts";
import { LUA_LIST_ENTRY, LUA_PAIR } from "./lua-lib.ts";

/**
 * heartbeat-bucket: refreshes a session's mirror in one bucket and re-adds it to the bucket's
 * namespace lists (which also repairs a bucket that lost them). A session that is no longer its
 * client's current one in this bucket (replaced or deregistered) is left alone.
 *
 * KEYS[1]       workers   hash sessionId → record JSON
 * KEYS[2]       clients   hash clientId → sessionId \n generation
 * KEYS[3 …]     namespace lists of the session (hash sessionId → expiry \\n headroom \\n flags)
 * ARGV[1] sessionId
 * ARGV[2] record JSON (carries clientId and gen)
 *
 * Returns 1 when mirrored, 0 when superseded here.
 */
const LUA = `${LUA_PAIR}${LUA_LIST_ENTRY}
local sid, json = ARGV[1], ARGV[2]
local rec = cjson.decode(json)
local cur = redis.call('HGET', KEYS[2], rec.clientId)
if cur then
  local csid, cgen = pair(cur)
  if csid ~= sid or tonumber(cgen) > rec.gen then return 0 end
else
  redis.call('HSET', KEYS[2], rec.clientId, sid .. '\\n' .. rec.gen)
end
redis.call('HSET', KEYS[1], sid, json)
local entry = list_entry(rec)
for i = 3, #KEYS do redis.call('HSET', KEYS[i], sid, entry) end
return 1
`;

export const heartbeatBucket = defineScript("heartbeat-bucket", LUA, "1871f7c8aaa6be83c9b310612405f3dc542d7451");
