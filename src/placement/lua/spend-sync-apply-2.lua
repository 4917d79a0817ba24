--[[
  spend-sync-apply: the second half of a spend sync (src/placement/spend-sync.ts), in one bucket t:
  lowers a session's namespace list entries here to what it has spent everywhere, so that a
  placement decision in t sees placements made in other buckets.

  Per session the caller passes the headroom revision r it read (the latest of the session's
  spent counts) and `elsewhere`, the sum of the counts kept under r by every other bucket, as
  read. Only when the bucket's mirror holds that same revision (its list entries then carry the
  headroom H of r) is anything written: each listed entry of the session gets

      min(entry, H − own − elsewhere)        own = this bucket's count under r, read here

  Counts only grow under one revision and every term is a count some bucket really holds, so the
  target never subtracts a placement twice: running this again, late or out of order, changes
  nothing (a lower entry, say from a drain's re-mirror, is kept). A mirror of an older revision
  (the heartbeat's fan-out has not reached this bucket yet) is reported back as behind, for the
  caller to retry; a newer one means the counts read belong to a replaced headroom: skipped.

  KEYS[1] workers     hash sessionId → record JSON (the bucket's mirror)
  KEYS[2] spent       hash sessionId → headroomRev \n new placements in the bucket since
  KEYS[3 …] nsLists   namespace lists, three keys each: list, expiries, summary (includes/ns-list.lua)
  ARGV[1 …] sessions  per session: sessionId, r, elsewhere, k, then k indexes into KEYS (each the
                      first of one of its lists' three keys)

  Returns {entries lowered, {sessionIds whose mirror here is behind r}}.
]]
--- @include "pair"
--- @include "ns-list"
--- @include "spent"

local lowered, behind = 0, {}
local i = 1
while i + 3 <= #ARGV do
  local sid, rev, elsewhere, k = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  local first = i + 4
  i = first + k
  local w = redis.call('HGET', KEYS[1], sid)
  local rec = w and cjson.decode(w)
  local headroom = rec and tonumber(rec.headroom)
  if rec and headroom_rev(rec) < rev then
    behind[#behind + 1] = sid
  elseif headroom and headroom_rev(rec) == rev then
    local target = headroom - spent_get(KEYS[2], sid, rev) - elsewhere
    for j = first, first + k - 1 do
      local li = tonumber(ARGV[j])
      local list_key, exps_key, summary_key = KEYS[li], KEYS[li + 1], KEYS[li + 2]
      local raw = redis.call('HGET', list_key, sid)
      local e = raw and entry_parse(raw)
      if e and e.headroom > target then
        list_ready(list_key, exps_key, summary_key)
        local flags = string.sub(raw, string.find(raw, '\n', #e.expiry_s + 2, true))
        redis.call('HSET', list_key, sid, e.expiry_s .. '\n' .. tostring(target) .. flags)
        if e.clean then summary_add(summary_key, 0, target - e.headroom) end
        lowered = lowered + 1
      end
    end
  end
end
return {lowered, behind}
