--[[
  clear-overwritten: after a 2xx from a forward, drops the id's overwritten marker when it is at
  or below the served epoch (the instance is evidently back at that epoch or later).

  KEYS[1] overwritten   hash env \n ns \n id → epoch
  ARGV[1] field         env \n ns \n id
  ARGV[2] epoch         the served epoch

  Returns 1 when the marker was cleared, else 0.
]]

local marker = redis.call('HGET', KEYS[1], ARGV[1])
if not marker or tonumber(marker) > tonumber(ARGV[2]) then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[1])
