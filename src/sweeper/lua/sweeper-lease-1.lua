--[[
  sweeper-lease: takes, renews or releases the sweeper lease, so one sweep pass runs at a time
  across the fleet (cron isolates and Node timers alike). Only the holder renews or releases.

  KEYS[1] lease    string: holder id, with a TTL
  ARGV[1] holder   holder id
  ARGV[2] ttlMs    TTL ms, or 0 to release

  Returns 1 when the caller holds (or just released) the lease, else 0.
]]

local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
end
return 1
