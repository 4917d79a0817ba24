--[[
  register-session: the fleet-wide half of POST /registry/register, atomic in the {global} slot.
  Prunes dead sessions (expiry + lease < now; each recorded in the audit trail as worker.died)
  and bindings without a live worker, checks the client's account and the hostname-aware
  bindings, then writes the record.

  KEYS[1] sessions             hash sessionId → record JSON
  KEYS[2] clients              hash clientId → account tag \n sessionId
  KEYS[3] hostnameBindings     hash {hostname}{ns} → env \n epoch
  KEYS[4] envBindings          hash env → takeover \n epoch
  KEYS[5] bindingQuarantine    hash {hostname}{ns} → quarantined-until ms
  KEYS[6] drain                string: the client's drain ("cordon" or deadline ms)
  KEYS[7] generation           counter of registrations, orders bucket mirrors
  KEYS[8] sessionExpiries      zset sessionId → expiry (the index over KEYS[1])
  KEYS[9] sessionOwners        hash sessionId → {"a": account tag, "c": clientId, "d"?: 1}
  KEYS[10] sessionOwnerChecks  zset sessionId → when (ms) register next looks at the KEYS[9] entry
  KEYS[11] audit               stream of audit entries (the pruned sessions' worker.died)
  ARGV[1] json                 record JSON: sessionId, clientId, account (its tag), hostname, env, envs, namespaces,
                               takeover, bindingEpoch (digits), selfDraining, …
  ARGV[2] leaseTtlMs           lease TTL ms
  ARGV[3] hostnameAware        "1" in hostname-aware mode
  ARGV[4] prevSessionId        prevSessionId or ""
  ARGV[5] ownerMemoryMs        owner memory window ms (how long an owner is remembered past its record, at least)
  ARGV[6] ownerMemoryCap       owner memory cap (entries)
  ARGV[7] auditCap             the audit trail's cap (entries)
  ARGV[8] legacyAccount        the account itself: an owner written before account tags holds it

  Returns {"ok", record JSON, drain deadline ms or "", replaced sessionId or "", prevAllowed 0|1 (1 only
           when the prevSessionId's record, or once the record is gone its remembered owner, names
           this account and client)}
       or {"conflict", message}.

  Owner memory: a reclaim hands rows over at their epoch, so the account that may reclaim a
  session's rows must be known for as long as rows can name the session, which outlives its
  record (deregister and pruning drop the record; rows wait for dead-owner eviction). Each
  register remembers its session's owner and looks at up to 100 entries that fell due: one whose
  session is still on record is due again a window later; one without a record is marked ("d")
  and due a window later, when it is forgotten. An owner is thus remembered one to two windows
  past the moment its record is gone (time without any register does not count). Only register
  adds entries, so only register needs to forget them; at the cap the entries due soonest make
  room for the new one. A forgotten owner fails closed: the ids come back in duplicates.

  Account tags (src/auth/account-tags.ts): the record, the client owner and the remembered owner
  hold the account's tag (rec.account). One written before tags holds the account itself
  (ARGV[8]): it is the same owner, and this script writes the tag in its place (the client owner,
  and the remembered owners of the replaced session and of prevSessionId).
]]
--- @include "now"
--- @include "pair"
--- @include "expiry-index"
--- @include "prune-fleet"
--- @include "renew-lease"

local now = now_ms()
local rec = cjson.decode(ARGV[1])
local lease = tonumber(ARGV[2])
local aware = ARGV[3] == '1'
local legacy = ARGV[8]

-- The caller's own account: its tag, or the account itself as stored before tags.
local function own(a)
  return a == rec.account or (legacy ~= '' and a == legacy)
end

local function remember_owner(owners_key, checks_key, sessions_key, r, window, cap)
  if redis.call('HLEN', owners_key) ~= redis.call('ZCARD', checks_key) then
    redis.call('DEL', checks_key)
    for _, sid in ipairs(redis.call('HKEYS', owners_key)) do redis.call('ZADD', checks_key, now + window, sid) end
  end
  for _, sid in ipairs(redis.call('ZRANGEBYSCORE', checks_key, '-inf', now, 'LIMIT', 0, 100)) do
    local raw = redis.call('HGET', owners_key, sid)
    local o = raw and cjson.decode(raw)
    if redis.call('HEXISTS', sessions_key, sid) == 1 then
      redis.call('ZADD', checks_key, now + window, sid)
    elseif o and o.d == nil then
      o.d = 1
      redis.call('HSET', owners_key, sid, cjson.encode(o))
      redis.call('ZADD', checks_key, now + window, sid)
    else
      redis.call('HDEL', owners_key, sid)
      redis.call('ZREM', checks_key, sid)
    end
  end
  local over = redis.call('ZCARD', checks_key) - cap + 1
  if over > 0 then
    local popped = redis.call('ZPOPMIN', checks_key, over)
    for i = 1, #popped, 2 do redis.call('HDEL', owners_key, popped[i]) end
  end
  redis.call('HSET', owners_key, r.sessionId, cjson.encode({ a = r.account, c = r.clientId }))
  redis.call('ZADD', checks_key, now + window, r.sessionId)
end

-- A remembered owner of this account written before tags (the account itself) gets the tag.
local function retag_owner(owners_key, sid)
  if sid == '' then return end
  local raw = redis.call('HGET', owners_key, sid)
  local o = raw and cjson.decode(raw)
  if o and o.a ~= rec.account and own(o.a) then
    o.a = rec.account
    redis.call('HSET', owners_key, sid, cjson.encode(o))
  end
end

local function env_of(r, ns)
  local e = r.envs[ns]
  if e == nil or e == cjson.null then return r.env end
  return e
end

prune_fleet(KEYS[1], KEYS[8], KEYS[2], KEYS[3], KEYS[4], now, lease, aware, KEYS[11], ARGV[7], 'registry')

local replaced = ''
local owner = redis.call('HGET', KEYS[2], rec.clientId)
if owner then
  local account, sid = pair(owner)
  if not own(account) then return {'conflict', 'client belongs to another account'} end
  replaced = sid
end

-- A reclaim hands rows over at their epoch, so prevSessionId must be this client's own previous
-- session, judged on its record or, once that is gone, on its remembered owner. A session of
-- another account or another client, or one whose owner is unknown, reclaims nothing.
local prev_allowed = 0
if ARGV[4] ~= '' then
  local prev_owner
  local prev = redis.call('HGET', KEYS[1], ARGV[4])
  if prev then
    local p = cjson.decode(prev)
    prev_owner = { a = p.account, c = p.clientId }
  else
    local m = redis.call('HGET', KEYS[9], ARGV[4])
    if m then prev_owner = cjson.decode(m) end
  end
  if prev_owner and own(prev_owner.a) and prev_owner.c == rec.clientId then prev_allowed = 1 end
end

if aware then
  local epoch = tonumber(rec.bindingEpoch)
  for _, ns in ipairs(rec.namespaces) do
    local key = rec.hostname .. ns
    local b = redis.call('HGET', KEYS[3], key)
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env_of(rec, ns) and epoch <= tonumber(bepoch) then
        return {'conflict', 'hostname ' .. key .. ' is bound to env ' .. benv .. ' at epoch ' .. bepoch ..
          ', not ' .. env_of(rec, ns) .. ' — register with a higher epoch to displace'}
      end
    end
  end
  local seen = {}
  for _, ns in ipairs(rec.namespaces) do
    local env = env_of(rec, ns)
    if not seen[env] then
      seen[env] = true
      local t = redis.call('HGET', KEYS[4], env)
      if t then
        local take, tepoch = pair(t)
        if take ~= rec.takeover and epoch <= tonumber(tepoch) then
          return {'conflict', 'env ' .. env .. ' agreed takeover ' .. take .. ' at epoch ' .. tepoch ..
            ', not ' .. rec.takeover .. ' — register with a higher epoch to displace'}
        end
      end
    end
  end
  for _, ns in ipairs(rec.namespaces) do
    local key, env = rec.hostname .. ns, env_of(rec, ns)
    local b = redis.call('HGET', KEYS[3], key)
    local keep = rec.bindingEpoch
    if b then
      local benv, bepoch = pair(b)
      if benv ~= env then
        redis.call('HSET', KEYS[5], key, tostring(now + lease))
      elseif tonumber(bepoch) > epoch then
        keep = bepoch
      end
    end
    redis.call('HSET', KEYS[3], key, env .. '\n' .. keep)
  end
  for env in pairs(seen) do
    local t = redis.call('HGET', KEYS[4], env)
    local keep = rec.bindingEpoch
    if t then
      local take, tepoch = pair(t)
      if take == rec.takeover and tonumber(tepoch) > epoch then keep = tepoch end
    end
    redis.call('HSET', KEYS[4], env, rec.takeover .. '\n' .. keep)
  end
end

local deadline = renew_lease(rec, KEYS[6], now, lease)
rec.registeredAt = now
rec.gen = redis.call('INCR', KEYS[7])
rec.rev = 1

remember_owner(KEYS[9], KEYS[10], KEYS[1], rec, tonumber(ARGV[5]), tonumber(ARGV[6]))
retag_owner(KEYS[9], replaced)
retag_owner(KEYS[9], ARGV[4])
if replaced ~= '' and replaced ~= rec.sessionId then index_del(KEYS[1], KEYS[8], replaced) end
local encoded = cjson.encode(rec)
index_set(KEYS[1], KEYS[8], rec.sessionId, encoded, rec.expiry)
redis.call('HSET', KEYS[2], rec.clientId, rec.account .. '\n' .. rec.sessionId)
return {'ok', encoded, deadline, replaced, prev_allowed, tostring(now)}
