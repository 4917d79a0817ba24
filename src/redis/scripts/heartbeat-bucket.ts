import { defineScript } from "../script.ts";
import { LUA_PAIR } from "./lua-lib.ts";

/**
 * heartbeat-bucket: refreshes a session's mirror in one bucket and re-adds it to the bucket's
 * namespace lists (which also repairs a bucket that lost them). A session that is no longer its
 * client's current one in this bucket (replaced or deregistered) is left alone.
 *
 * KEYS[1]       workers   hash sessionId → record JSON
 * KEYS[2]       clients   hash clientId → sessionId \n generation
 * KEYS[3 …]     namespace lists of the session
 * ARGV[1] sessionId
 * ARGV[2] record JSON (carries clientId and gen)
 *
 * Returns 1 when mirrored, 0 when superseded here.
 */
const LUA = `${LUA_PAIR}
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
for i = 3, #KEYS do redis.call('SADD', KEYS[i], sid) end
return 1
`;

export const heartbeatBucket = defineScript("heartbeat-bucket", LUA, "3330dc5b0c6c09d4dba9b19438e93658bf5a141f");
