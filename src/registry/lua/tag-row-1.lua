--[[
  tag-row: compare-and-set of a placement's owner tag, written only while the row's sessionId
  matches and its epoch equals the quoted one.

  KEYS[1] placements   hash id → row
  ARGV[1] sessionId
  ARGV[2] id
  ARGV[3] epoch        quoted epoch (digits)
  ARGV[4] tag

  Returns 1 when tagged, else 0.
]]
--- @include "row"

local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return 0 end
local row = row_decode(raw)
if row.sid ~= ARGV[1] or row.epoch ~= ARGV[3] then return 0 end
row.tag = ARGV[4]
redis.call('HSET', KEYS[1], ARGV[2], row_encode(row))
return 1
