--[[
  spread-slice: one bounded slice of the spread count of GET /registry/spread. HSCANs one
  placements hash from a cursor and counts its rows by owner inside Redis, so only the tallies
  leave it: a call looks at about ARGV[2] rows (its last page may pass that by up to ARGV[3]) and
  answers where the next call goes on, so Redis is never held for the whole of a large hash.

  KEYS[1] placements   hash id → row `sessionId \n epoch \n expiry \n hostname \n tag`
  ARGV[1] cursor       HSCAN cursor to go on from ("0": the start)
  ARGV[2] budget       rows to look at in this call, about
  ARGV[3] count        HSCAN's COUNT for each page

  A placed row (it has an epoch and no wind-down fence that has passed, by Redis' clock) counts
  under its sessionId and hostname; any other row (a placeholder, a passed fence) under an empty
  sessionId and its hostname. Whether an owner is live is for the caller to judge.

  Returns {next cursor ("0" when the hash is done), rows looked at,
           "sessionId \n hostname", count, "sessionId \n hostname", count, …}.
]]
--- @include "now"

local now = now_ms()
local cursor, budget, count = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
-- hostname → sessionId → rows: nested, so no string is built per row (this loop is the cost).
local tally, scanned = {}, 0
repeat
  local page = redis.call('HSCAN', KEYS[1], cursor, 'COUNT', count)
  cursor = page[1]
  local rows = page[2]
  for i = 2, #rows, 2 do
    local sid, epoch, expiry, host = string.match(rows[i], '^([^\n]*)\n([^\n]*)\n([^\n]*)\n?([^\n]*)')
    if sid == nil or epoch == '' or (expiry ~= '' and tonumber(expiry) <= now) then sid = '' end
    host = host or ''
    local owners = tally[host]
    if owners == nil then
      owners = {}
      tally[host] = owners
    end
    owners[sid] = (owners[sid] or 0) + 1
  end
  scanned = scanned + #rows / 2
until cursor == '0' or scanned >= budget
local out = {cursor, scanned}
for host, owners in pairs(tally) do
  for sid, n in pairs(owners) do
    out[#out + 1] = sid .. '\n' .. host
    out[#out + 1] = n
  end
end
return out
