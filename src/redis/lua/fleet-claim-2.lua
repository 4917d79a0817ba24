--[[
  fleet-claim: one node's turn at the fleet license and cluster membership. The node serves only
  when every other live member runs the same license or a lower epoch, and the license is
  absent, byte-for-byte its own, or of a lower epoch (then overwritten). Only a serving node
  writes its membership, so a mismatched node never blocks the fleet that already serves.

  KEYS[1] license      string: license JSON {schema, shards, hostnameAware, epoch}, TTL one lease
  KEYS[2] members      hash nodeId → {license, epoch, expiry} JSON
  ARGV[1] nodeId
  ARGV[2] license      this node's license JSON
  ARGV[3] fleetEpoch   fleet epoch
  ARGV[4] leaseTtlMs   lease TTL ms

  Returns {1} when serving, {0, "member", nodeId, license} or {0, "license", license} when not.
]]
--- @include "now"

local now = now_ms()
local epoch, lease = tonumber(ARGV[3]), tonumber(ARGV[4])
local members = redis.call('HGETALL', KEYS[2])
for i = 1, #members, 2 do
  local m = cjson.decode(members[i + 1])
  if m.expiry <= now then
    redis.call('HDEL', KEYS[2], members[i])
  elseif members[i] ~= ARGV[1] and m.license ~= ARGV[2] and m.epoch >= epoch then
    return {0, 'member', members[i], m.license}
  end
end
local current = redis.call('GET', KEYS[1])
if current and current ~= ARGV[2] and cjson.decode(current).epoch >= epoch then
  return {0, 'license', current}
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', lease)
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode({license = ARGV[2], epoch = epoch, expiry = now + lease}))
return {1}
