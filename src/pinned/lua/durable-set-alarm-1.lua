--[[
  durable-set-alarm: sets or clears an instance's alarm at its placement epoch.

  KEYS[1] meta    hash: epoch, hostname, alarm
  ARGV[1] epoch   the quoted placement epoch (the fence)
  ARGV[2] dueAt   due time in ms, or "" to clear

  Returns {1}.
]]
--- @include "fence"

if ARGV[2] == '' then redis.call('HDEL', KEYS[1], 'alarm') else redis.call('HSET', KEYS[1], 'alarm', ARGV[2]) end
return {1}
