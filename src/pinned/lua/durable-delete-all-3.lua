--[[
  durable-delete-all: deletes an instance's whole storage and its alarm at its placement epoch.

  KEYS[1] meta       hash: epoch, hostname, alarm
  KEYS[2] data       hash key → value
  KEYS[3] keyIndex   zset of the keys, score 0 (lexicographic order)
  ARGV[1] epoch      the quoted placement epoch (the fence)

  Returns {1}; the data, the key index and the alarm are gone.
]]
--- @include "fence"

redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HDEL', KEYS[1], 'alarm')
return {1}
