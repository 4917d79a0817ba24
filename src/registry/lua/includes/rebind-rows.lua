--[[
  rebind_rows(from, to, live, first): re-binds the rows named by ARGV pairs from `first` on
  (index into KEYS of a placements hash, id) from session `from` to `to`, keeping their epoch,
  when `live`. Returns the duplicates (index, id: neither re-bound nor owned by `to`) and the
  re-bound rows carrying a wind-down expiry (index, id, expiry).
]]
--- @include "row"

local function rebind_rows(from, to, live, first)
  local dups, requeue = {}, {}
  for i = first, #ARGV, 2 do
    local kidx, id = tonumber(ARGV[i]), ARGV[i + 1]
    local raw = redis.call('HGET', KEYS[kidx], id)
    local row = raw and row_decode(raw)
    if live and row and row.sid == from then
      row.sid = to
      redis.call('HSET', KEYS[kidx], id, row_encode(row))
      if row.expiry ~= '' then
        requeue[#requeue + 1] = tostring(kidx); requeue[#requeue + 1] = id; requeue[#requeue + 1] = row.expiry
      end
    elseif not (row and row.sid == to) then
      dups[#dups + 1] = tostring(kidx); dups[#dups + 1] = id
    end
  end
  return dups, requeue
end
