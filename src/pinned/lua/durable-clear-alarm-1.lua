--[[
  durable-clear-alarm: clears an instance's alarm at its placement epoch, only while it still has
  the due time the caller saw (a fired alarm must not clear one set meanwhile).

  KEYS[1] meta    hash: epoch, hostname, alarm
  ARGV[1] epoch   the quoted placement epoch (the fence)
  ARGV[2] dueAt   the due time the caller saw

  Returns {1, 1} when the alarm still had that due time and is cleared, else {1, 0}.
]]
--- @include "fence"

if redis.call('HGET', KEYS[1], 'alarm') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'alarm')
  return {1, 1}
end
return {1, 0}
