--[[
  deregister-session: drops a live session's record, its client mapping and its control queue,
  and mints the generation the bucket tombstones carry. Placements are left to dead-owner
  eviction.

  KEYS[1] sessions          hash sessionId → record JSON
  KEYS[2] clients           hash clientId → account tag \n sessionId
  KEYS[3] queue             hash msgId → message JSON
  KEYS[4] generation        counter of registrations
  KEYS[5] sessionExpiries   zset sessionId → expiry (the index over KEYS[1])
  ARGV[1] sessionId

  Returns {"ok", record JSON, generation} or {"unknown"} (no record, or expired).
]]
--- @include "now"
--- @include "drop-session"

local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local rec = cjson.decode(raw)
if rec.expiry <= now_ms() then return {'unknown'} end
drop_session(KEYS[1], KEYS[5], KEYS[2], rec)
redis.call('DEL', KEYS[3])
return {'ok', raw, tostring(redis.call('INCR', KEYS[4]))}
