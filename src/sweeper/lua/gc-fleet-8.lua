--[[
  gc-fleet: the sweeper's fleet-wide GC, the same pruning register does: sessions dead for
  longer than a lease (each recorded in the audit trail as worker.died), bindings without a live
  worker, and expired cluster members. Then the audit trail's re-admissions: each recorded
  ejection that has run out is recorded as worker.readmitted, when its worker still has a record
  (a worker that died meanwhile has its worker.died), and forgotten.

  KEYS[1] sessions           hash sessionId → record JSON
  KEYS[2] clients            hash clientId → account tag \n sessionId
  KEYS[3] hostnameBindings   hash {hostname}{ns} → env \n epoch
  KEYS[4] envBindings        hash env → takeover \n epoch
  KEYS[5] members            hash nodeId → member JSON
  KEYS[6] sessionExpiries    zset sessionId → expiry (the index over KEYS[1])
  KEYS[7] audit              stream of audit entries
  KEYS[8] auditEjections     hash sessionId → ejected-until ms (recorded, re-admission not yet)
  ARGV[1] leaseTtlMs         lease TTL ms
  ARGV[2] hostnameAware      "1" in hostname-aware mode
  ARGV[3] auditCap           the audit trail's cap (entries)

  Returns the number of sessions left.
]]
--- @include "now"
--- @include "prune-fleet"
--- @include "audit"

local now = now_ms()
local lease, aware = tonumber(ARGV[1]), ARGV[2] == '1'
prune_fleet(KEYS[1], KEYS[6], KEYS[2], KEYS[3], KEYS[4], now, lease, aware, KEYS[7], ARGV[3], 'sweeper')
local members = redis.call('HGETALL', KEYS[5])
for i = 1, #members, 2 do
  if cjson.decode(members[i + 1]).expiry <= now then redis.call('HDEL', KEYS[5], members[i]) end
end
local ejections = redis.call('HGETALL', KEYS[8])
for i = 1, #ejections, 2 do
  local sid, ejected_until = ejections[i], tonumber(ejections[i + 1]) or 0
  if ejected_until <= now then
    local raw = redis.call('HGET', KEYS[1], sid)
    if raw then
      audit_append(KEYS[7], ARGV[3], now, 'event', 'worker.readmitted', '', 'sweeper',
        audit_worker_target(cjson.decode(raw)), { ejectedUntil = ejected_until })
    end
    redis.call('HDEL', KEYS[8], sid)
  end
end
return redis.call('HLEN', KEYS[1])
