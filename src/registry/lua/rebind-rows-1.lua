--[[
  rebind-rows: re-binds placement rows of one bucket from one session to another, keeping their
  epoch, atomic in the {bucket} slot. Register's reclaim of the instances a worker still holds
  (prevSessionId → the new session, guarded by the bucket's mirror naming the new session) and
  its undo when the register fails afterwards (the new session → prevSessionId, unguarded). One
  call carries at most REBIND_CHUNK_IDS ids, so its Lua time stays a few milliseconds however many
  ids a register names: a register sends as many calls as it needs.

  KEYS[1] clients        hash clientId → sessionId \n generation (the bucket's mirror ordering)
  KEYS[2 …] placements   placements hashes named by the pairs
  ARGV[1] from           the session whose rows re-bind ("" re-binds nothing)
  ARGV[2] to             the session they re-bind to
  ARGV[3] guard          the clientId whose entry in KEYS[1] must name `to` for anything to re-bind
                         (a newer registration of the client, or a tombstone, holds the bucket otherwise), or ""
  ARGV[4 …] pairs        index into KEYS of a placements hash, id

  Returns {duplicates: index, id…, re-bound rows carrying a wind-down expiry: index, id, expiry…}.
  A duplicate is an id neither re-bound nor already owned by `to`.
]]
--- @include "pair"
--- @include "rebind-rows"

local from, to, guard = ARGV[1], ARGV[2], ARGV[3]
local live = from ~= ''
if live and guard ~= '' then
  local cur = redis.call('HGET', KEYS[1], guard)
  live = cur and pair(cur) == to
end
local dups, requeue = rebind_rows(from, to, live, 4)
return {dups, requeue}
