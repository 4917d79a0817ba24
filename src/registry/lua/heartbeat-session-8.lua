--[[
  heartbeat-session: the fleet-wide half of POST /registry/heartbeat, atomic in {global}.
  Renews the lease (bounded by a timed drain) and bumps the record's revision (`rev`, which the
  bucket mirrors compare), applies the probe outcome, replaces headroom (and marks it with the new
  revision, `headroomRev`: placements the buckets counted under an older one no longer count),
  drops acked control messages and peeks the rest. A probe that answered another worker's value
  voids the registration; a hostname binding moved to another env supersedes it.

  KEYS[1] sessions           hash sessionId → record JSON
  KEYS[2] clients            hash clientId → account tag \n sessionId
  KEYS[3] queue              hash msgId → message JSON (this session's control queue)
  KEYS[4] drain              string: the client's drain ("cordon" or deadline ms)
  KEYS[5] hostnameBindings   hash {hostname}{ns} → env \n epoch
  KEYS[6] generation         counter of registrations (a dropped session's tombstone)
  KEYS[7] sessionExpiries    zset sessionId → expiry (the index over KEYS[1])
  KEYS[8] sessionOwners      hash sessionId → {"a": account tag, "c": clientId, "d"?: 1}
  ARGV[1] sessionId
  ARGV[2] clientId           the clientId the caller read (the drain key is derived from it)
  ARGV[3] headroom
  ARGV[4] draining           "1" when the worker reports itself draining
  ARGV[5] probe              probe outcome: "pass" | "fail" | "mismatch"
  ARGV[6] leaseTtlMs         lease TTL ms
  ARGV[7] hostnameAware      "1" in hostname-aware mode
  ARGV[8] sealedSecret       the record's secret sealed, replacing a legacy plaintext one; "" keeps it
  ARGV[9] accountTag         the caller's account tag (src/auth/account-tags.ts)
  ARGV[10] legacyAccount     the caller's account: the record, client owner or session owner
                             holding it (written before account tags) gets ARGV[9] in its place
  ARGV[11 …] acks            acked msgIds

  Returns {"ok", record JSON, drain deadline ms or "", now, {msgId, message JSON, …}}
       or {"unknown"} | {"voided", record JSON, generation}
       | {"superseded", record JSON, generation, key, env, epoch}.
]]
--- @include "now"
--- @include "pair"
--- @include "expiry-index"
--- @include "drop-session"
--- @include "renew-lease"

local now = now_ms()
local lease = tonumber(ARGV[6])
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local rec = cjson.decode(raw)
if rec.expiry <= now or rec.clientId ~= ARGV[2] then return {'unknown'} end

if ARGV[5] == 'mismatch' then
  drop_session(KEYS[1], KEYS[7], KEYS[2], rec)
  redis.call('DEL', KEYS[3])
  return {'voided', raw, tostring(redis.call('INCR', KEYS[6]))}
end

if ARGV[7] == '1' then
  for _, ns in ipairs(rec.namespaces) do
    local env = rec.envs[ns]
    if env == nil or env == cjson.null then env = rec.env end
    local key = rec.hostname .. ns
    local b = redis.call('HGET', KEYS[5], key)
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env then
        drop_session(KEYS[1], KEYS[7], KEYS[2], rec)
        redis.call('DEL', KEYS[3])
        return {'superseded', raw, tostring(redis.call('INCR', KEYS[6])), key, benv, bepoch}
      end
    else
      redis.call('HSET', KEYS[5], key, env .. '\n' .. rec.bindingEpoch)
    end
  end
end

-- A session's secret never changes: the caller sealed the very value this record holds.
if ARGV[8] ~= '' then rec.secret = ARGV[8] end
local tag, legacy = ARGV[9], ARGV[10]
if legacy ~= '' and rec.account == legacy then rec.account = tag end
if legacy ~= '' and redis.call('HGET', KEYS[2], rec.clientId) == legacy .. '\n' .. ARGV[1] then
  redis.call('HSET', KEYS[2], rec.clientId, tag .. '\n' .. ARGV[1])
end
local owner = redis.call('HGET', KEYS[8], ARGV[1])
if legacy ~= '' and owner then
  local o = cjson.decode(owner)
  if o.a == legacy then
    o.a = tag
    redis.call('HSET', KEYS[8], ARGV[1], cjson.encode(o))
  end
end
rec.headroom = tonumber(ARGV[3])
rec.selfDraining = ARGV[4] == '1'
if ARGV[5] == 'pass' then
  rec.degradedSince = nil
elseif rec.degradedSince == nil or rec.degradedSince == cjson.null then
  rec.degradedSince = now
end

local deadline = renew_lease(rec, KEYS[4], now, lease)
rec.rev = (tonumber(rec.rev) or 0) + 1
rec.headroomRev = rec.rev
local encoded = cjson.encode(rec)
index_set(KEYS[1], KEYS[7], ARGV[1], encoded, rec.expiry)

for i = 11, #ARGV do redis.call('HDEL', KEYS[3], ARGV[i]) end
local messages = redis.call('HGETALL', KEYS[3])
if #messages > 0 then redis.call('PEXPIRE', KEYS[3], 2 * lease) end
return {'ok', encoded, deadline, tostring(now), messages}
