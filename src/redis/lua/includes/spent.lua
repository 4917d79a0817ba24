--[[
  A session's spent headroom in one bucket (keys.ts `spent`): `headroomRev \n count`, the new
  placements made in the bucket since the record's headroom revision `headroomRev` (set by each
  heartbeat; 0 for the registration's headroom; headroom_rev(rec) reads it). spent_get answers
  the count under `rev` and whether the stored count belongs to another revision (a replaced
  headroom: it counts for nothing); spent_add counts one more placement.
]]
--- @include "pair"

local function headroom_rev(rec) return tonumber(rec.headroomRev) or 0 end
local function spent_get(spent_key, sid, rev)
  local raw = redis.call('HGET', spent_key, sid)
  if not raw then return 0, false end
  local r, c = pair(raw)
  if tonumber(r) ~= rev then return 0, true end
  return tonumber(c) or 0, false
end
local function spent_add(spent_key, sid, rev)
  local count = spent_get(spent_key, sid, rev)
  redis.call('HSET', spent_key, sid, string.format('%.0f', rev) .. '\n' .. string.format('%.0f', count + 1))
end
