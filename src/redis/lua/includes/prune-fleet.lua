--[[
  prune_fleet(sessions_key, index_key, clients_key, hostnames_key, envs_key, now, lease, aware,
  audit_key, audit_cap, audit_via): prunes sessions dead for longer than a lease
  (expiry + lease < now), found by the expiry index, each recorded in the audit trail as
  worker.died (`audit_via`: registry or sweeper, whichever pruned it), and, in hostname-aware
  mode, hostname and env bindings that no live worker holds (which reads every record).
]]
--- @include "pair"
--- @include "expiry-index"
--- @include "drop-session"
--- @include "audit"

local function prune_fleet(sessions_key, index_key, clients_key, hostnames_key, envs_key, now, lease, aware,
                           audit_key, audit_cap, audit_via)
  for _, d in ipairs(index_dead(sessions_key, index_key, now, lease)) do
    drop_session(sessions_key, index_key, clients_key, d.rec)
    audit_append(audit_key, audit_cap, now, 'event', 'worker.died', '', audit_via, audit_worker_target(d.rec),
      { expiredAt = d.rec.expiry, draining = d.rec.draining == true })
  end
  if not aware then return end
  local live_hn, live_env = {}, {}
  local all = redis.call('HGETALL', sessions_key)
  for i = 1, #all, 2 do
    local r = cjson.decode(all[i + 1])
    if r.expiry > now then
      for _, ns in ipairs(r.namespaces) do
        local e = r.envs[ns]
        if e == nil or e == cjson.null then e = r.env end
        live_hn[r.hostname .. ns] = true
        live_env[e] = true
      end
    end
  end
  local hb = redis.call('HGETALL', hostnames_key)
  for i = 1, #hb, 2 do
    if not live_hn[hb[i]] then redis.call('HDEL', hostnames_key, hb[i]) end
  end
  local eb = redis.call('HGETALL', envs_key)
  for i = 1, #eb, 2 do
    if not live_env[eb[i]] then redis.call('HDEL', envs_key, eb[i]) end
  end
end
