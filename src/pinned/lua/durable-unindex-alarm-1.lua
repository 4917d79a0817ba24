--[[
  durable-unindex-alarm: drops an instance from the alarm index while its due time is the one
  the caller cleared. On the alarm index (its own slot, never with an instance key).

  KEYS[1] alarms   zset instance member → due time ms
  ARGV[1] member   the instance's member
  ARGV[2] dueAt    the due time the caller cleared

  Returns 1 when the member was removed, else 0.
]]

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
