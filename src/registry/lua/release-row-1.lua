--[[
  release-row: compare-and-delete of one placement row. The row is freed only while its
  sessionId matches and its epoch equals the quoted one ("" quotes an epoch-less row); a release
  that quotes no epoch at all (ARGV[4] "1") frees the session's row whatever its epoch.

  KEYS[1] placements   hash id → row
  ARGV[1] sessionId
  ARGV[2] id
  ARGV[3] epoch        quoted epoch (digits, or ""); ignored when ARGV[4] is "1"
  ARGV[4] anyEpoch?    "1" when no epoch was quoted (absent: compare the epoch)

  Returns 1 when the row was deleted, else 0.
]]
--- @include "row"

local raw = redis.call('HGET', KEYS[1], ARGV[2])
if not raw then return 0 end
local row = row_decode(raw)
if row.sid ~= ARGV[1] then return 0 end
if ARGV[4] ~= '1' and row.epoch ~= ARGV[3] then return 0 end
return redis.call('HDEL', KEYS[1], ARGV[2])
