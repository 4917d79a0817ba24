--[[
  scan-orphans: one HSCAN page of a placements hash, listing on the overwritten hash every row
  whose owner is dead (no mirror, or expiry ≤ now), so the durability sweep brings the instance
  back at a live worker. A row already listed keeps its marker.

  KEYS[1] placements    hash id → row
  KEYS[2] workers       hash sessionId → record JSON (the bucket's mirror)
  KEYS[3] overwritten   hash env \n ns \n id → epoch
  ARGV[1] cursor        HSCAN cursor
  ARGV[2] count         COUNT hint
  ARGV[3] space         env \n ns (the marker field's prefix)

  Returns {next cursor, rows listed}.
]]
--- @include "now"
--- @include "row"

local now = now_ms()
local page = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local rows, listed, alive = page[2], 0, {}
for i = 1, #rows, 2 do
  local row = row_decode(rows[i + 1])
  if row.epoch ~= '' then
    local live = alive[row.sid]
    if live == nil then
      local w = redis.call('HGET', KEYS[2], row.sid)
      live = (w and cjson.decode(w).expiry > now) or false
      alive[row.sid] = live
    end
    if not live then listed = listed + redis.call('HSETNX', KEYS[3], ARGV[3] .. '\n' .. rows[i], row.epoch) end
  end
end
return {page[1], listed}
