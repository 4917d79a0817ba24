--[[
  wake-page: one HSCAN page of a bucket's overwritten hash for the durability sweep, from the
  cursor the last page stored: returns the ids due for a wake (no wake state, or one neither
  parked nor backing off) and stores where the next page starts. A page holding more due ids
  than ARGV[2] returns the first ARGV[2] and keeps its cursor, so the next page reads it again
  (the handled ids are no longer due by then); a page read to its end moves the cursor on, and
  the end of the hash deletes it, so the next page starts the hash over.

  KEYS[1] overwritten   hash env \n ns \n id → epoch
  KEYS[2] wakes         hash env \n ns \n id → attempts \n next-at ms \n parked 0|1 \n last error
  KEYS[3] wakeCursor    string: the HSCAN cursor of KEYS[1] the next page starts at
  ARGV[1] count         HSCAN COUNT hint
  ARGV[2] limit         due ids returned at most

  Returns {stored cursor ("0": the next page starts the hash over), {due field, …}, truncated 1|0}.
]]
--- @include "now"

local now, limit = now_ms(), tonumber(ARGV[2])
local cursor = redis.call('GET', KEYS[3]) or '0'
local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', tonumber(ARGV[1]))
local fields, due, truncated = page[2], {}, false
for i = 1, #fields, 2 do
  local state = redis.call('HGET', KEYS[2], fields[i])
  local next_at, parked = 0, '0'
  if state then
    local _, at, p = string.match(state, '^(%d*)\n(%d*)\n?(%d?)')
    next_at, parked = tonumber(at) or 0, p
  end
  if parked ~= '1' and next_at <= now then
    if #due == limit then
      truncated = true
      break
    end
    due[#due + 1] = fields[i]
  end
end
local resume = truncated and cursor or page[1]
if resume == '0' then
  redis.call('DEL', KEYS[3])
else
  redis.call('SET', KEYS[3], resume)
end
return {resume, due, truncated and 1 or 0}
