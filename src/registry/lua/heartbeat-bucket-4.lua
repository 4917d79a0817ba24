--[[
  heartbeat-bucket: refreshes a session's mirror in one bucket and re-adds it to the bucket's
  namespace lists (which also repairs a bucket that lost them). A session older than the client's
  registration or tombstone in this bucket (replaced or deregistered: a lower generation) is left
  alone, and so is a mirror of a later revision of the record (`rev`: a drain applied while this
  heartbeat was in flight). A newer registration than the bucket's takes the bucket over.

  Headroom: a record whose headroom revision (`headroomRev`, set by each heartbeat) differs from
  the one the bucket's spent count was kept under starts the count afresh. Every list entry gets
  the record's headroom less the placements already spent: this bucket's own count, read here,
  and ARGV[3], the other buckets' counts as the caller read them before this mirror (0 for a
  heartbeat, whose headroom replaces all of them). Spent counts of sessions without a mirror here
  are dropped once they outnumber the mirrors.

  KEYS[1] workers          hash sessionId → record JSON
  KEYS[2] clients          hash clientId → sessionId \n generation
  KEYS[3] workerExpiries   zset sessionId → expiry (the index over KEYS[1])
  KEYS[4] spent            hash sessionId → headroomRev \n placements in this bucket since
  KEYS[5 …] nsLists        namespace lists of the session, three keys each: list, expiries, summary
                           (includes/ns-list.lua)
  ARGV[1] sessionId
  ARGV[2] json             record JSON (carries clientId, gen and headroomRev)
  ARGV[3] spentElsewhere   placements spent in other buckets under the record's headroom revision ("" = 0)

  Returns 1 when mirrored, 0 when superseded here.
]]
--- @include "now"
--- @include "pair"
--- @include "expiry-index"
--- @include "list-entry"
--- @include "ns-list"
--- @include "spent"

local sid, json = ARGV[1], ARGV[2]
local elsewhere = tonumber(ARGV[3]) or 0
local rec = cjson.decode(json)
local held = redis.call('HGET', KEYS[1], sid)
if held and (tonumber(cjson.decode(held).rev) or 0) > (tonumber(rec.rev) or 0) then return 0 end
local cur = redis.call('HGET', KEYS[2], rec.clientId)
if cur then
  local csid, cgen = pair(cur)
  if tonumber(cgen) > rec.gen then return 0 end
  if csid ~= sid then
    -- A registration newer than the bucket's (a drain mirrors it before its register-bucket got
    -- here): take the bucket over for it as register-bucket will, dropping the replaced session.
    if csid ~= '' then
      index_del(KEYS[1], KEYS[3], csid)
      redis.call('HDEL', KEYS[4], csid)
      for i = 5, #KEYS, 3 do
        local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
        list_del(list_key, exps_key, summary_key, csid)
      end
    end
    redis.call('HSET', KEYS[2], rec.clientId, sid .. '\n' .. rec.gen)
  end
else
  redis.call('HSET', KEYS[2], rec.clientId, sid .. '\n' .. rec.gen)
end
index_set(KEYS[1], KEYS[3], sid, json, rec.expiry)

local own, replaced = spent_get(KEYS[4], sid, headroom_rev(rec))
if replaced then redis.call('HDEL', KEYS[4], sid) end
if redis.call('HLEN', KEYS[4]) > redis.call('HLEN', KEYS[1]) then
  for _, s in ipairs(redis.call('HKEYS', KEYS[4])) do
    if redis.call('HEXISTS', KEYS[1], s) == 0 then redis.call('HDEL', KEYS[4], s) end
  end
end
rec.headroom = rec.headroom - elsewhere - own

local entry, now = list_entry(rec), now_ms()
for i = 5, #KEYS, 3 do
  local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  list_set(list_key, exps_key, summary_key, sid, entry, now)
end
return 1
