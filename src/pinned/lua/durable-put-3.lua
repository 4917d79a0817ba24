--[[
  durable-put: writes entries of an instance's storage at its placement epoch.

  KEYS[1] meta       hash: epoch, hostname, alarm
  KEYS[2] data       hash key → value
  KEYS[3] keyIndex   zset of the keys, score 0 (lexicographic order)
  ARGV[1] epoch      the quoted placement epoch (the fence)
  ARGV[2 …] entries  key1, value1, key2, value2, …

  Returns {1}.
]]
--- @include "fence"

for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[3], 0, ARGV[i])
end
return {1}
