--[[
  gc-fleet: the sweeper's fleet-wide GC, the same pruning register does: sessions dead for
  longer than a lease, bindings without a live worker, and expired cluster members.

  KEYS[1] sessions           hash sessionId → record JSON
  KEYS[2] clients            hash clientId → account \n sessionId
  KEYS[3] hostnameBindings   hash {hostname}{ns} → env \n epoch
  KEYS[4] envBindings        hash env → takeover \n epoch
  KEYS[5] members            hash nodeId → member JSON
  KEYS[6] sessionExpiries    zset sessionId → expiry (the index over KEYS[1])
  ARGV[1] leaseTtlMs         lease TTL ms
  ARGV[2] hostnameAware      "1" in hostname-aware mode

  Returns the number of sessions left.
]]
--- @include "now"
--- @include "prune-fleet"

local now = now_ms()
prune_fleet(KEYS[1], KEYS[6], KEYS[2], KEYS[3], KEYS[4], now, tonumber(ARGV[1]), ARGV[2] == '1')
local members = redis.call('HGETALL', KEYS[5])
for i = 1, #members, 2 do
  if cjson.decode(members[i + 1]).expiry <= now then redis.call('HDEL', KEYS[5], members[i]) end
end
return redis.call('HLEN', KEYS[1])
