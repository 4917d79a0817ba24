--[[
  register-bucket: the per-bucket half of POST /registry/register, atomic in one {bucket} slot.
  Mirrors the record into the bucket (unless a newer registration of the same client, or a later
  revision of this record — a drain applied meanwhile — got here first), joins the namespace
  lists, prunes dead mirrors, and reclaims the first chunk (at most REBIND_CHUNK_IDS) of the
  worker's in-memory instances in this bucket: rows owned by prevSessionId re-bind to the new
  session keeping their epoch, in the same step that moves the client's mirror, so no reader
  sees a row of the replaced session without that session's mirror. Ids past the chunk re-bind
  afterwards through rebind-rows.ts, so no one call grows with the ids a register names.

  KEYS[1] workers            hash sessionId → record JSON (the bucket's mirror)
  KEYS[2] clients            hash clientId → sessionId \n generation
  KEYS[3] workerExpiries     zset sessionId → expiry (the index over KEYS[1])
  KEYS[4 … 3+3L] nsLists     namespace lists, three keys each: list, expiries, summary (includes/ns-list.lua)
  KEYS[4+3L …] placements    placements hashes named by the reclaim pairs
  ARGV[1] sessionId
  ARGV[2] json               record JSON (carries clientId and gen)
  ARGV[3] leaseTtlMs         lease TTL ms
  ARGV[4] listCount          L, the number of namespace lists
  ARGV[5] prevSessionId      prevSessionId or "" (reclaims nothing when "")
  ARGV[6 …] pairs            reclaim pairs: index into KEYS of a placements hash, id

  Returns {"ok" | "stale", {duplicates: index, id…}, {re-bound with a wind-down: index, id, expiry…}};
  "stale" (a newer registration of the client holds the bucket) re-binds nothing.
]]
--- @include "now"
--- @include "pair"
--- @include "rebind-rows"
--- @include "expiry-index"
--- @include "prune-mirrors"
--- @include "list-entry"
--- @include "ns-list"

local now = now_ms()
local sid, json, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local nlists, prev = tonumber(ARGV[4]), ARGV[5]
local rec = cjson.decode(json)

local status = 'ok'
local cur = redis.call('HGET', KEYS[2], rec.clientId)
if cur then
  local csid, cgen = pair(cur)
  if tonumber(cgen) > rec.gen then
    status = 'stale'
  elseif csid ~= sid and csid ~= '' then
    index_del(KEYS[1], KEYS[3], csid)
    for i = 4, 3 + 3 * nlists, 3 do
      local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
      list_del(list_key, exps_key, summary_key, csid)
    end
  end
end

if status == 'ok' then
  redis.call('HSET', KEYS[2], rec.clientId, sid .. '\n' .. rec.gen)
  -- A drain applied before this mirror got here already mirrored a later revision: keep it.
  local held = redis.call('HGET', KEYS[1], sid)
  if not (held and (tonumber(cjson.decode(held).rev) or 0) > (tonumber(rec.rev) or 0)) then
    index_set(KEYS[1], KEYS[3], sid, json, rec.expiry)
    local entry = list_entry(rec)
    for i = 4, 3 + 3 * nlists, 3 do
      local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
      list_set(list_key, exps_key, summary_key, sid, entry, now)
    end
  end
end

prune_mirrors(KEYS[1], KEYS[3], now, lease)
local dups, requeue = rebind_rows(prev, sid, status == 'ok' and prev ~= '', 6)
return {status, dups, requeue}
