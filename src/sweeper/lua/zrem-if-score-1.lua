--[[
  zrem-if-score: removes a sorted-set member only while its score is still the one read, so a
  stale due-alarm entry goes but one rescheduled meanwhile stays.

  KEYS[1] zset     sorted set
  ARGV[1] member
  ARGV[2] score    score as read

  Returns 1 when removed, else 0.
]]

local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) ~= tonumber(ARGV[2]) then return 0 end
return redis.call('ZREM', KEYS[1], ARGV[1])
