/**
 * Lua helpers shared by several scripts, prepended to their bodies. A placement row is one
 * string: `sessionId \n epoch \n expiry \n hostname \n tag` (empty fields for absent values;
 * the tag is last so it may hold anything). Worker records are cjson objects.
 */

export const LUA_NOW = `
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;

export const LUA_ROW = `
local function row_decode(s)
  local f, pos = {}, 1
  for i = 1, 4 do
    local j = string.find(s, '\\n', pos, true)
    if not j then f[i] = string.sub(s, pos); pos = nil; break end
    f[i] = string.sub(s, pos, j - 1)
    pos = j + 1
  end
  return { sid = f[1] or '', epoch = f[2] or '', expiry = f[3] or '', host = f[4] or '',
           tag = pos and string.sub(s, pos) or '' }
end
local function row_encode(r)
  return r.sid .. '\\n' .. r.epoch .. '\\n' .. r.expiry .. '\\n' .. r.host .. '\\n' .. r.tag
end
`;

/** Splits `a \n b` stored values (client owners, bindings) into two strings. */
export const LUA_PAIR = `
local function pair(s)
  local j = string.find(s, '\\n', 1, true)
  if not j then return s, '' end
  return string.sub(s, 1, j - 1), string.sub(s, j + 1)
end
`;

/**
 * An expiry index: a zset sessionId → expiry beside a hash of record JSON, so that pruning reads
 * only the records it prunes. Every write of the hash updates the index; a count that differs
 * (an older layout, an edit behind the scripts' back) rebuilds it in one pass.
 */
export const LUA_EXPIRY_INDEX = `
local function index_ready(hash_key, index_key)
  if redis.call('HLEN', hash_key) ~= redis.call('ZCARD', index_key) then
    redis.call('DEL', index_key)
    local all = redis.call('HGETALL', hash_key)
    for i = 1, #all, 2 do redis.call('ZADD', index_key, cjson.decode(all[i + 1]).expiry, all[i]) end
  end
end
local function index_set(hash_key, index_key, sid, json, expiry)
  redis.call('HSET', hash_key, sid, json)
  redis.call('ZADD', index_key, expiry, sid)
end
local function index_del(hash_key, index_key, sid)
  redis.call('HDEL', hash_key, sid)
  redis.call('ZREM', index_key, sid)
end
-- {sid, rec} of every record whose expiry + lease < now.
local function index_dead(hash_key, index_key, now, lease)
  index_ready(hash_key, index_key)
  local dead = {}
  for _, sid in ipairs(redis.call('ZRANGEBYSCORE', index_key, '-inf', '(' .. string.format('%.0f', now - lease))) do
    local raw = redis.call('HGET', hash_key, sid)
    if not raw then
      redis.call('ZREM', index_key, sid)
    else
      local r = cjson.decode(raw)
      if r.expiry + lease < now then dead[#dead + 1] = { sid = sid, rec = r } else redis.call('ZADD', index_key, r.expiry, sid) end
    end
  end
  return dead
end
`;

/** Drops a session from the fleet-wide record hash and its index and, when it is the client's current one, the client map. Needs LUA_EXPIRY_INDEX. */
export const LUA_DROP_SESSION = `
local function drop_session(sessions_key, index_key, clients_key, rec)
  index_del(sessions_key, index_key, rec.sessionId)
  local owner = redis.call('HGET', clients_key, rec.clientId)
  if owner then
    local _, sid = pair(owner)
    if sid == rec.sessionId then redis.call('HDEL', clients_key, rec.clientId) end
  end
end
`;

/**
 * Prunes sessions dead for longer than a lease (expiry + lease < now), found by the expiry index,
 * and, in hostname-aware mode, hostname and env bindings that no live worker holds (which reads
 * every record). Needs LUA_PAIR, LUA_EXPIRY_INDEX and LUA_DROP_SESSION.
 */
export const LUA_PRUNE_FLEET = `
local function prune_fleet(sessions_key, index_key, clients_key, hostnames_key, envs_key, now, lease, aware)
  for _, d in ipairs(index_dead(sessions_key, index_key, now, lease)) do
    drop_session(sessions_key, index_key, clients_key, d.rec)
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
`;

/** Prunes a bucket's mirrors of sessions dead for longer than a lease, by the expiry index. Needs LUA_EXPIRY_INDEX. */
export const LUA_PRUNE_MIRRORS = `
local function prune_mirrors(workers_key, index_key, now, lease)
  local dead = index_dead(workers_key, index_key, now, lease)
  for _, d in ipairs(dead) do index_del(workers_key, index_key, d.sid) end
  return #dead
end
`;

/**
 * Renews a record's lease: expiry = now + lease, bounded by a timed drain's deadline, and
 * draining = the worker's own flag OR an operator drain. Returns the drain deadline ("" when
 * the drain is a cordon or absent).
 */
export const LUA_RENEW_LEASE = `
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
`;

/**
 * A namespace list entry: `expiry \n headroom \n flags` (flags: "d" draining, "g" degraded),
 * the compact view of a worker that candidate selection reads without decoding JSON.
 */
export const LUA_LIST_ENTRY = `
local function list_entry(rec)
  local flags = ''
  if rec.draining then flags = flags .. 'd' end
  if rec.degradedSince ~= nil and rec.degradedSince ~= cjson.null then flags = flags .. 'g' end
  return string.format('%.0f', rec.expiry) .. '\\n' .. tostring(rec.headroom) .. '\\n' .. flags
end
`;

/**
 * A session's spent headroom in one bucket (keys.ts `spent`): `headroomRev \n count`, the new
 * placements made in the bucket since the record's headroom revision `headroomRev` (set by each
 * heartbeat; 0 for the registration's headroom). spent_get answers the count under `rev` and
 * whether the stored count belongs to another revision (a replaced headroom: it counts for
 * nothing). Needs LUA_PAIR.
 */
export const LUA_SPENT = `
local function headroom_rev(rec) return tonumber(rec.headroomRev) or 0 end
local function spent_get(spent_key, sid, rev)
  local raw = redis.call('HGET', spent_key, sid)
  if not raw then return 0, false end
  local r, c = pair(raw)
  if tonumber(r) ~= rev then return 0, true end
  return tonumber(c) or 0, false
end
local function spent_add(spent_key, sid, rev)
  local count = spent_get(spent_key, sid, rev)
  redis.call('HSET', spent_key, sid, string.format('%.0f', rev) .. '\\n' .. string.format('%.0f', count + 1))
end
`;

/**
 * rebind_rows(from, to, live, first): re-binds the rows named by ARGV pairs from `first` on
 * (index into KEYS of a placements hash, id) from session `from` to `to`, keeping their epoch,
 * when `live`. Returns the duplicates (index, id: neither re-bound nor owned by `to`) and the
 * re-bound rows carrying a wind-down expiry (index, id, expiry). Needs LUA_ROW.
 */
export const LUA_REBIND_ROWS = `
local function rebind_rows(from, to, live, first)
  local dups, requeue = {}, {}
  for i = first, #ARGV, 2 do
    local kidx, id = tonumber(ARGV[i]), ARGV[i + 1]
    local raw = redis.call('HGET', KEYS[kidx], id)
    local row = raw and row_decode(raw)
    if live and row and row.sid == from then
      row.sid = to
      redis.call('HSET', KEYS[kidx], id, row_encode(row))
      if row.expiry ~= '' then
        requeue[#requeue + 1] = tostring(kidx); requeue[#requeue + 1] = id; requeue[#requeue + 1] = row.expiry
      end
    elseif not (row and row.sid == to) then
      dups[#dups + 1] = tostring(kidx); dups[#dups + 1] = id
    end
  end
  return dups, requeue
end
`;
