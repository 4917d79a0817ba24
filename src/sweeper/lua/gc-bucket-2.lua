--[[
  gc-bucket: the sweeper's per-bucket GC of mirrors dead for longer than a lease. Namespace
  lists shed such sessions lazily when a resolve reads them.

  KEYS[1] workers          hash sessionId → record JSON
  KEYS[2] workerExpiries   zset sessionId → expiry (the index over KEYS[1])
  ARGV[1] leaseTtlMs       lease TTL ms

  Returns the number of mirrors pruned.
]]
--- @include "now"
--- @include "prune-mirrors"

return prune_mirrors(KEYS[1], KEYS[2], now_ms(), tonumber(ARGV[1]))
