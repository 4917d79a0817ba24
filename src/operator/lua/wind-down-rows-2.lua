--[[
  wind-down-rows: stamps (or clears) the wind-down expiry of the named placement rows of one
  bucket, each a compare-and-set on the owner it was judged by: a row is stamped only while its
  sessionId and hostname are still the ones the caller read (and judged the operator's scope
  on). The fence lives on the row, so it survives the owner's death and binds a replacement
  owner. Only the ids passed are ever touched: there is no "every row" form, so a caller cannot
  stamp a row it did not judge.

  KEYS[1] placements   hash id → row
  KEYS[2] workers      hash sessionId → record JSON (the bucket's mirrors: owner liveness)
  ARGV[1] stamp        "read", or the deadline ms, or "" to clear the wind-down
  ARGV[2 …] rows       triples: id, expected sessionId, expected hostname

  "read" stamps nothing and returns a flat {id, sessionId, hostname, …} of every row, for the
  caller to judge (one script so that a namespace-wide wind-down reads every bucket in one
  round trip through runMany).

  Otherwise returns a flat {id, outcome, …} for every id that was not simply gone:
    "notify"  stamped, and its owner is to be told: the row has an epoch (not a placeholder),
              its owner is live (mirror expiry > now) and its previous fence had not passed;
    "stamped" stamped, no message (dead owner, placeholder row, fence already past);
    "changed" not stamped: the row's owner or hostname changed since the caller read it.
  A missing row is left out.
]]
--- @include "now"
--- @include "row"

local out = {}
if ARGV[1] == 'read' then
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do
    local row = row_decode(all[i + 1])
    out[#out + 1] = all[i]
    out[#out + 1] = row.sid
    out[#out + 1] = row.host
  end
  return out
end
local now = now_ms()
for i = 2, #ARGV, 3 do
  local id, sid, host = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local raw = redis.call('HGET', KEYS[1], id)
  if raw then
    local row = row_decode(raw)
    if row.sid ~= sid or row.host ~= host then
      out[#out + 1] = id
      out[#out + 1] = 'changed'
    else
      local passed = row.expiry ~= '' and tonumber(row.expiry) <= now
      local live = false
      if row.epoch ~= '' and row.sid ~= '' then
        local w = redis.call('HGET', KEYS[2], row.sid)
        live = w ~= false and cjson.decode(w).expiry > now
      end
      row.expiry = ARGV[1]
      redis.call('HSET', KEYS[1], id, row_encode(row))
      out[#out + 1] = id
      out[#out + 1] = (live and not passed) and 'notify' or 'stamped'
    end
  end
end
return out
