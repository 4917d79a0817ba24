--[[
  unmirror-bucket: removes a dropped session (deregistered, voided, superseded) from one bucket
  and leaves a tombstone in the client map so that a heartbeat still in flight cannot mirror it
  back. A later registration of the client carries a higher generation and replaces the tombstone.

  KEYS[1] workers          hash sessionId → record JSON
  KEYS[2] clients          hash clientId → sessionId \n generation
  KEYS[3] workerExpiries   zset sessionId → expiry (the index over KEYS[1])
  KEYS[4 …] nsLists        namespace lists of the session, three keys each: list, expiries, summary
  ARGV[1] sessionId
  ARGV[2] clientId
  ARGV[3] generation       tombstone generation

  Returns 1 when the bucket held the session, else 0.
]]
--- @include "pair"
--- @include "ns-list"

local sid, client, gen = ARGV[1], ARGV[2], ARGV[3]
local held = redis.call('HDEL', KEYS[1], sid)
redis.call('ZREM', KEYS[3], sid)
for i = 4, #KEYS, 3 do
  local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  list_del(list_key, exps_key, summary_key, sid)
end
local cur = redis.call('HGET', KEYS[2], client)
if not cur or pair(cur) == sid then redis.call('HSET', KEYS[2], client, '\n' .. gen) end
return held
