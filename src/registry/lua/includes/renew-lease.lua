--[[
  renew_lease(rec, drain_key, now, lease): renews a record's lease: expiry = now + lease, bounded
  by a timed drain's deadline, and draining = the worker's own flag OR an operator drain. Returns
  the drain deadline ("" when the drain is a cordon or absent).
]]

local function renew_lease(rec, drain_key, now, lease)
  local drain = redis.call('GET', drain_key)
  local expiry, deadline = now + lease, ''
  if drain and drain ~= 'cordon' then
    deadline = drain
    if tonumber(drain) < expiry then expiry = tonumber(drain) end
  end
  rec.expiry = expiry
  rec.draining = rec.selfDraining or (drain ~= false)
  return deadline
end
