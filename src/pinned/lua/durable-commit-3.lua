--[[
  durable-commit: applies one storage transaction of an instance at its placement epoch: all its
  puts and deletes, or (stale epoch) none of them. Each key appears once, as a put or a delete.

  KEYS[1] meta       hash: epoch, hostname, alarm
  KEYS[2] data       hash key → value
  KEYS[3] keyIndex   zset of the keys, score 0 (lexicographic order)
  ARGV[1] epoch      the quoted placement epoch (the fence)
  ARGV[2] puts       how many entries to write (n)
  ARGV[3 …] writes   the n entries key1, value1, … keyN, valueN, then the keys to delete

  Returns {1}.
]]
--- @include "fence"

local last = 2 + 2 * tonumber(ARGV[2])
for i = 3, last, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[3], 0, ARGV[i])
end
for i = last + 1, #ARGV do
  redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
end
return {1}
