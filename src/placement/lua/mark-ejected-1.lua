--[[
  mark-ejected: mirrors an ejection into one bucket, where the resolve script reads it, and
  drops the bucket's ejections that have run out.

  KEYS[1] ejected     hash sessionId → ejected-until ms
  ARGV[1] sessionId
  ARGV[2] until       ejected-until ms

  Returns 1.
]]
--- @include "now"

local now = now_ms()
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if tonumber(all[i + 1]) <= now then redis.call('HDEL', KEYS[1], all[i]) end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
