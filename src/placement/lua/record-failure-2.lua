--[[
  record-failure: counts a 502/503/504 (or unreachable, timed-out forward) toward outlier
  ejection, shared by every node. The fifth consecutive failure ejects the worker from new
  placements for base × 2^(ejections - 1), capped at max, unless half the live workers are
  already ejected.

  KEYS[1] outliers         hash sessionId → consecutive \n ejections \n ejected-until ms
  KEYS[2] sessions         hash sessionId → record JSON (to count live workers)
  ARGV[1] sessionId
  ARGV[2] ejectAfter       consecutive failures that eject (5)
  ARGV[3] baseEjectionMs   base ejection ms (30000)
  ARGV[4] maxEjectionMs    longest ejection ms

  Returns the ejected-until time in ms when this failure ejected the worker, else 0.
]]
--- @include "now"

local now = now_ms()
local sid, threshold = ARGV[1], tonumber(ARGV[2])
local cur = redis.call('HGET', KEYS[1], sid) or '0\n0\n0'
local a = string.find(cur, '\n', 1, true)
local b = string.find(cur, '\n', a + 1, true)
local consecutive = tonumber(string.sub(cur, 1, a - 1)) + 1
local ejections = tonumber(string.sub(cur, a + 1, b - 1))
local until_ms = tonumber(string.sub(cur, b + 1))
local result = 0
if consecutive >= threshold and until_ms <= now then
  local live, ejected = 0, 0
  local all = redis.call('HGETALL', KEYS[2])
  for i = 1, #all, 2 do
    if cjson.decode(all[i + 1]).expiry > now then live = live + 1 end
  end
  local outliers = redis.call('HGETALL', KEYS[1])
  for i = 1, #outliers, 2 do
    local o = outliers[i + 1]
    local u = tonumber(string.sub(o, string.find(o, '\n[^\n]*$') + 1))
    if u > now then ejected = ejected + 1 end
  end
  if ejected + 1 <= math.floor(live / 2) then
    ejections = ejections + 1
    until_ms = now + math.min(tonumber(ARGV[3]) * 2 ^ (ejections - 1), tonumber(ARGV[4]))
    consecutive = 0
    result = until_ms
  end
end
redis.call('HSET', KEYS[1], sid, consecutive .. '\n' .. ejections .. '\n' .. string.format('%.0f', until_ms))
return result
