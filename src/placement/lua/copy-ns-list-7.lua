--[[
  copy-ns-list: seeds a bucket that has no list for a namespace with another bucket's (read by
  ns-list-snapshot): the sessions join the list and their record mirrors come along, as a
  heartbeat would write them. Writes nothing when the list exists by now (a heartbeat or another
  copy got here first), so running it twice is running it once.

  Per session, the bucket's own state wins where it is newer: a mirror of a later revision here
  is kept (and listed), a session whose client this bucket knows at a higher generation (replaced
  or deregistered) is skipped, and a newer registration takes the client over as register-bucket
  would. The entry's headroom is the record's less the placements this bucket counted under its
  headroom revision.

  KEYS[1] workers          hash sessionId → record JSON
  KEYS[2] clients          hash clientId → sessionId \n generation
  KEYS[3] workerExpiries   zset sessionId → expiry (the index over KEYS[1])
  KEYS[4] spent            hash sessionId → headroomRev \n placements in this bucket since
  KEYS[5] nsList           hash sessionId → expiry \n headroom \n flags
  KEYS[6] nsExpiries       zset sessionId → expiry (the list's index)
  KEYS[7] nsSummary        hash n, sum, v, a:{slot} (includes/ns-list.lua)
  ARGV[1 …] snapshot       sessionId, its record JSON, and so on in pairs (ns-list-snapshot's reply)

  Returns the number of sessions listed; 0 when the list already existed.
]]
--- @include "now"
--- @include "pair"
--- @include "expiry-index"
--- @include "list-entry"
--- @include "ns-list"
--- @include "spent"

if redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
local now = now_ms()
local listed = 0
for i = 1, #ARGV - 1, 2 do
  local sid, json = ARGV[i], ARGV[i + 1]
  local rec = cjson.decode(json)
  local held = redis.call('HGET', KEYS[1], sid)
  if held then
    local h = cjson.decode(held)
    if (tonumber(h.rev) or 0) >= (tonumber(rec.rev) or 0) then rec, json = h, held end
  end
  local cur = redis.call('HGET', KEYS[2], rec.clientId)
  local csid, cgen = '', nil
  if cur then
    csid, cgen = pair(cur)
    cgen = tonumber(cgen) or 0
  end
  if not cgen or cgen <= rec.gen then
    if csid ~= '' and csid ~= sid then
      index_del(KEYS[1], KEYS[3], csid)
      redis.call('HDEL', KEYS[4], csid)
    end
    if csid ~= sid then redis.call('HSET', KEYS[2], rec.clientId, sid .. '\n' .. rec.gen) end
    if json ~= held then index_set(KEYS[1], KEYS[3], sid, json, rec.expiry) end
    rec.headroom = rec.headroom - spent_get(KEYS[4], sid, headroom_rev(rec))
    list_set(KEYS[5], KEYS[6], KEYS[7], sid, list_entry(rec), now)
    listed = listed + 1
  end
end
return listed
