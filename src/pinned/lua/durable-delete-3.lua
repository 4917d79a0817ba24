--[[
  durable-delete: deletes keys of an instance's storage at its placement epoch.

  KEYS[1] meta       hash: epoch, hostname, alarm
  KEYS[2] data       hash key → value
  KEYS[3] keyIndex   zset of the keys, score 0 (lexicographic order)
  ARGV[1] epoch      the quoted placement epoch (the fence)
  ARGV[2 …] deleted  the keys to delete

  Returns {1, how many existed}.
]]
--- @include "fence"

local n = 0
for i = 2, #ARGV do
  n = n + redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
end
return {1, n}
