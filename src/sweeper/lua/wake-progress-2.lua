--[[
  wake-progress: the durability sweep's bookkeeping for one overwritten-listed id.
    done    → the marker is cleared when at or below the served epoch, the entry forgotten;
    pending → (202, still activating) check again at ARGV[3];
    failed  → attempts + 1, retry at now + backoff, parked once attempts reach ARGV[4];
    drop    → the id is not durable: marker and entry go.

  KEYS[1] wakes         hash env \n ns \n id → attempts \n next-at ms \n parked 0|1 \n last error
  KEYS[2] overwritten   hash env \n ns \n id → epoch
  ARGV[1] field         env \n ns \n id
  ARGV[2] outcome       "done" | "pending" | "failed" | "drop"
  ARGV[3] timing        pending: next check ms; failed: base backoff ms
  ARGV[4] parkAfter     attempts that park the entry
  ARGV[5] detail        done: served epoch; failed: the error, for operators

  Returns 1 when the entry is parked now, else 0.
]]
--- @include "now"

local field, outcome = ARGV[1], ARGV[2]
if outcome == 'drop' then
  redis.call('HDEL', KEYS[1], field)
  redis.call('HDEL', KEYS[2], field)
  return 0
end
if outcome == 'done' then
  redis.call('HDEL', KEYS[1], field)
  local marker = redis.call('HGET', KEYS[2], field)
  if marker and tonumber(marker) <= tonumber(ARGV[5]) then redis.call('HDEL', KEYS[2], field) end
  return 0
end
local cur = redis.call('HGET', KEYS[1], field) or '0\n0\n0\n'
local attempts = tonumber(string.match(cur, '^(%d+)'))
if outcome == 'pending' then
  redis.call('HSET', KEYS[1], field, attempts .. '\n' .. ARGV[3] .. '\n0\n')
  return 0
end
attempts = attempts + 1
local parked = attempts >= tonumber(ARGV[4]) and 1 or 0
local next_at = now_ms() + tonumber(ARGV[3]) * 2 ^ (attempts - 1)
redis.call('HSET', KEYS[1], field,
  attempts .. '\n' .. string.format('%.0f', next_at) .. '\n' .. parked .. '\n' .. ARGV[5])
return parked
