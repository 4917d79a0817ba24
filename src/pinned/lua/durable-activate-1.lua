--[[
  durable-activate: an instance's activation at its placement epoch: fences the epoch, records the
  hostname it runs for, and answers its alarm.

  KEYS[1] meta       hash: epoch, hostname, alarm
  ARGV[1] epoch      the quoted placement epoch (the fence)
  ARGV[2] hostname   "" keeps the stored one

  Returns {1, alarm due time in ms or ""}.
]]
--- @include "fence"

if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'hostname', ARGV[2]) end
return {1, redis.call('HGET', KEYS[1], 'alarm') or ''}
