--[[
  prune_mirrors(workers_key, index_key, now, lease): prunes a bucket's mirrors of sessions dead
  for longer than a lease, by the expiry index; answers how many.
]]
--- @include "expiry-index"

local function prune_mirrors(workers_key, index_key, now, lease)
  local dead = index_dead(workers_key, index_key, now, lease)
  for _, d in ipairs(dead) do index_del(workers_key, index_key, d.sid) end
  return #dead
end
