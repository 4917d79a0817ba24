--[[
  apply-drain: writes (or revokes) a client's operator drain and applies it to the client's
  current record at once, so new placements skip the worker before its next heartbeat. A timed
  drain bounds the lease by its deadline. Bumps the record's revision (`rev`), so a heartbeat
  mirror still in flight with the undrained record cannot overwrite this one in the buckets.

  KEYS[1] drain             string: "cordon" or the deadline ms
  KEYS[2] clients           hash clientId → account tag \n sessionId
  KEYS[3] sessions          hash sessionId → record JSON
  KEYS[4] sessionExpiries   zset sessionId → expiry (the index over KEYS[3])
  ARGV[1] clientId
  ARGV[2] value             "cordon", a deadline ms, or "" to revoke
  ARGV[3] ttlMs             the drain key's TTL ms (0: none)

  Returns {existed 0|1, record JSON or ""}.
]]
--- @include "pair"

local existed = redis.call('EXISTS', KEYS[1])
if ARGV[2] == '' then
  redis.call('DEL', KEYS[1])
elseif tonumber(ARGV[3]) > 0 then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', tonumber(ARGV[3]))
else
  redis.call('SET', KEYS[1], ARGV[2])
end
local owner = redis.call('HGET', KEYS[2], ARGV[1])
if not owner then return {existed, ''} end
local _, sid = pair(owner)
local raw = redis.call('HGET', KEYS[3], sid)
if not raw then return {existed, ''} end
local rec = cjson.decode(raw)
rec.draining = rec.selfDraining or ARGV[2] ~= ''
if ARGV[2] ~= '' and ARGV[2] ~= 'cordon' and tonumber(ARGV[2]) < rec.expiry then rec.expiry = tonumber(ARGV[2]) end
rec.rev = (tonumber(rec.rev) or 0) + 1
local encoded = cjson.encode(rec)
redis.call('HSET', KEYS[3], sid, encoded)
redis.call('ZADD', KEYS[4], rec.expiry, sid)
return {existed, encoded}
