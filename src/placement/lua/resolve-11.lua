--[[
  resolve: the placement decision for one (env, namespace, id), atomic in the id's bucket.
    1. a row whose owner is live and whose wind-down has not passed forwards to its owner;
       an owner of another hostname applies the env's takeover (deny, or a wind_down fence);
    2. no namespace list → unknown-ns;
    3. boot_time SET NX; inside boot_time + lease → quarantine (then binding quarantine);
    4. candidates: live, not draining, not degraded, not excluded, expiry - now ≥ min(5000,
       lease/3); outlier-ejected ones only when nothing else remains; none → no-backends;
    5. affinity: the attested caller's own session, else rendezvous on the affinity key's slot
       (key mod 1024), while the preferred worker's headroom ≥ mean / balance factor;
    6. otherwise power of two choices on headroom.
    Steps 4–6 read the list's indexes (includes/ns-list.lua): the mean comes from the summary less
    the few non-candidates, the slot's winner is cached per candidate-set version, and the two
    random candidates are drawn by rank from the expiry index, so a new placement costs O(log n)
    in n workers. A full scan of the list is the fallback (a missing or outdated cached winner,
    too few distinct draws, only ejected candidates left), and it rewrites the summary;
    7. a new epoch max(now µs, previous + 1, old row's + 1); the old row is listed on the
       overwritten hash; the chosen entry's headroom is decremented and the placement counted on
       the bucket's spent hash (under the mirror's headroom revision: what /registry/workers
       subtracts from the record, and the next drain mirror from every list of the bucket);
       the row is written.

  KEYS[1] placements    hash id → row
  KEYS[2] nsList        hash sessionId → expiry \n headroom \n flags
  KEYS[3] workers       hash sessionId → record JSON
  KEYS[4] bootTime      string ms
  KEYS[5] epoch         string: last epoch minted in the bucket
  KEYS[6] overwritten   hash env \n ns \n id → epoch of the re-placement
  KEYS[7] spaces        set of env \n ns with placements in the bucket
  KEYS[8] ejected       hash sessionId → ejected-until ms
  KEYS[9] nsExpiries    zset sessionId → expiry (the list's index)
  KEYS[10] nsSummary    hash n, sum, v, a:{slot} (includes/ns-list.lua)
  KEYS[11] spent        hash sessionId → headroomRev \n new placements in the bucket since
  ARGV[1] id
  ARGV[2] leaseTtlMs              lease TTL ms
  ARGV[3] hostname                the request's hostname ("" in single mode)
  ARGV[4] takeover                the env's takeover: "wind_down" | "deny" ("" in single mode)
  ARGV[5] exclude                 excluded sessionId or ""
  ARGV[6] callerSessionId         attested caller's sessionId or ""
  ARGV[7] affinityHash            affinity key hash (uint32) or "" to skip key affinity
  ARGV[8] balanceFactor           balance factor
  ARGV[9] bindingQuarantineUntil  binding quarantine until (ms) or ""
  ARGV[10] space                  env \n ns: the spaces member (and, with \n id, the overwritten field)
  ARGV[11] seed                   random seed, 1 … 2^31 − 2: the ranks candidates are drawn by come from it

  Returns {"forward", sessionId, epoch, advertiseUrl, secret, fresh "0"|"1", overwritten
           marker epoch or "", surviving wind-down expiry or "", owner hostname}
       or {"refuse", outcome, remaining ms, owner sessionId?, "1" when a takeover fence was just set,
           the fence (Redis-clock ms)?}.
]]
--- @include "row"
--- @include "pair"
--- @include "ns-list"
--- @include "spent"

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local id, lease, host = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local marker_field = ARGV[10] .. '\n' .. id
-- Park–Miller's minimal standard generator: load-balancing draws, exact in doubles.
local seed = tonumber(ARGV[11])
local function draw()
  seed = (seed * 16807) % 2147483647
  return seed
end

local raw = redis.call('HGET', KEYS[1], id)
local old = raw and row_decode(raw)
local keep_expiry = ''
if old then
  local wound_down = old.expiry ~= '' and tonumber(old.expiry) <= now
  if not wound_down then
    if old.epoch ~= '' then
      local w = redis.call('HGET', KEYS[3], old.sid)
      local rec = w and cjson.decode(w)
      if rec and rec.expiry > now then
        if host ~= '' and rec.hostname ~= host then
          if ARGV[4] == 'deny' then return {'refuse', 'takeover-denied', '0'} end
          local set = '0'
          if old.expiry == '' then
            old.expiry = string.format('%.0f', now + lease)
            redis.call('HSET', KEYS[1], id, row_encode(old))
            set = '1'
          end
          return {'refuse', 'takeover-pending', tostring(tonumber(old.expiry) - now), old.sid, set, old.expiry}
        end
        local marker = redis.call('HGET', KEYS[6], marker_field) or ''
        return {'forward', old.sid, old.epoch, rec.advertiseUrl, rec.secret, '0', marker, '', rec.hostname}
      end
    end
    keep_expiry = old.expiry
  end
end

if redis.call('EXISTS', KEYS[2]) == 0 then return {'refuse', 'unknown-ns', '0'} end
redis.call('SET', KEYS[4], string.format('%.0f', now), 'NX')
local boot = tonumber(redis.call('GET', KEYS[4]))
if boot + lease > now then return {'refuse', 'quarantine', tostring(boot + lease - now)} end
if ARGV[9] ~= '' and not old and tonumber(ARGV[9]) > now then
  return {'refuse', 'binding-quarantine', tostring(tonumber(ARGV[9]) - now)}
end

local list_key, exps_key, summary_key = KEYS[2], KEYS[9], KEYS[10]
list_ready(list_key, exps_key, summary_key)
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', exps_key, '-inf', '(' .. num_s(now - lease))) do
  list_del(list_key, exps_key, summary_key, sid)
end
if redis.call('EXISTS', list_key) == 0 then return {'refuse', 'no-backends', '0'} end

local ejected, eject_ends = {}, nil
local ej = redis.call('HGETALL', KEYS[8])
for i = 1, #ej, 2 do
  local untl = tonumber(ej[i + 1])
  if untl > now then
    ejected[ej[i]] = true
    if not eject_ends or untl < eject_ends then eject_ends = untl end
  end
end
local min_left = math.min(5000, lease / 3)
local balance = tonumber(ARGV[8])
local slot = ARGV[7] ~= '' and tonumber(ARGV[7]) % 1024 or nil

-- The candidates are the unflagged entries the summary counts, less the few listed ones that are
-- not candidates: expiring (by the expiry index), excluded and ejected.
local out = {}
for _, sid in ipairs(redis.call('ZRANGEBYSCORE', exps_key, '-inf', '(' .. num_s(now + min_left))) do out[sid] = true end
if ARGV[5] ~= '' then out[ARGV[5]] = true end
for sid in pairs(ejected) do out[sid] = true end
local agg = redis.call('HMGET', summary_key, 'n', 'sum', 'v')
local n, sum, version = tonumber(agg[1]) or 0, tonumber(agg[2]) or 0, agg[3] or '0'
for sid in pairs(out) do
  local entry = redis.call('HGET', list_key, sid)
  local e = entry and entry_parse(entry)
  if e and e.clean then n, sum = n - 1, sum - e.headroom end
end

local function candidate(sid)
  if out[sid] then return nil end
  local entry = redis.call('HGET', list_key, sid)
  local e = entry and entry_parse(entry)
  if not e or not e.clean or e.expiry - now < min_left then return nil end
  return { sid = sid, expiry = e.expiry_s, headroom = e.headroom }
end

local function mul32(x, y)
  local xl, xh, yl, yh = x % 65536, math.floor(x / 65536), y % 65536, math.floor(y / 65536)
  return ((xh * yl + xl * yh) % 65536 * 65536 + xl * yl) % 4294967296
end
local function mix(h)
  h = bit.bxor(h, math.floor(h / 65536)) % 4294967296
  h = mul32(h, 2246822507)
  h = bit.bxor(h, math.floor(h / 8192)) % 4294967296
  h = mul32(h, 3266489909)
  return bit.bxor(h, math.floor(h / 65536)) % 4294967296
end

-- Steps 5 and 6 in O(log n): the caller's entry, the slot's cached rendezvous winner, two
-- candidates drawn uniformly from the live range of the expiry index. nil sends the choice to
-- the full scan (a missing or outdated winner, too few distinct draws).
local function indexed_pick()
  local floor_headroom = (sum / n) / balance
  if ARGV[6] ~= '' then
    local c = candidate(ARGV[6])
    if c and c.headroom >= floor_headroom then return c end
  elseif slot then
    local cached = redis.call('HGET', summary_key, 'a:' .. slot)
    if not cached then return nil end
    local sid, rest = pair(cached)
    local cv, valid = pair(rest)
    if cv ~= version or (valid ~= '' and tonumber(valid) <= now) then return nil end
    local c = candidate(sid)
    if not c then return nil end
    if c.headroom >= floor_headroom then return c end
  end
  local total = redis.call('ZCARD', exps_key)
  local live = redis.call('ZCOUNT', exps_key, num_s(now + min_left), '+inf')
  if live == 0 then return nil end
  local first, second
  for _ = 1, 8 do
    local r = total - live + draw() % live
    local sid = redis.call('ZRANGE', exps_key, r, r)[1]
    if sid and not (first and sid == first.sid) then
      local c = candidate(sid)
      if c and first then second = c break end
      first = first or c
    end
  end
  if second then
    if second.headroom > first.headroom then return second end
    return first
  end
  if first and n == 1 then return first end
  return nil
end

-- Steps 4 to 6 over the whole list: the fallback, and the only path that sees ejected sessions
-- (used when nothing else remains). Rewrites the summary's count and sum as it goes.
local function scanned_pick()
  local cands, spare = {}, {}
  local cn, csum = 0, 0
  local all = redis.call('HGETALL', list_key)
  for i = 1, #all, 2 do
    local sid, e = all[i], entry_parse(all[i + 1])
    if e and e.clean then cn, csum = cn + 1, csum + e.headroom end
    if e and e.clean and e.expiry - now >= min_left and sid ~= ARGV[5] then
      local c = { sid = sid, expiry = e.expiry_s, headroom = e.headroom }
      if ejected[sid] then spare[#spare + 1] = c else cands[#cands + 1] = c end
    end
  end
  redis.call('HSET', summary_key, 'n', cn, 'sum', num_s(csum))
  local pool = cands
  if #pool == 0 then pool = spare end
  if #pool == 0 then return nil end
  local total = 0
  for _, c in ipairs(pool) do total = total + c.headroom end
  local floor_headroom = (total / #pool) / balance
  if ARGV[6] ~= '' then
    for _, c in ipairs(pool) do
      if c.sid == ARGV[6] and c.headroom >= floor_headroom then return c end
    end
  elseif slot then
    local best, best_score
    for _, c in ipairs(pool) do
      local sid_seed = tonumber(string.sub(c.sid, 1, 8), 16) or 0
      local score = mix(bit.bxor(slot, sid_seed) % 4294967296)
      if not best or score > best_score or (score == best_score and c.sid < best.sid) then
        best, best_score = c, score
      end
    end
    if pool == cands and ARGV[5] == '' then
      redis.call('HSET', summary_key, 'a:' .. slot,
        best.sid .. '\n' .. version .. '\n' .. (eject_ends and num_s(eject_ends) or ''))
    end
    if best.headroom >= floor_headroom then return best end
  end
  local m = #pool
  local i1 = draw() % m + 1
  local i2 = draw() % m + 1
  if m > 1 and i2 == i1 then i2 = i1 % m + 1 end
  if pool[i2].headroom > pool[i1].headroom then return pool[i2] end
  return pool[i1]
end

-- An entry whose mirror is gone (a session replaced by a registration with other namespaces)
-- is dropped and the choice made again, before anything is written.
local chosen, rec
while not rec do
  chosen = (n > 0 and indexed_pick()) or scanned_pick()
  if not chosen then return {'refuse', 'no-backends', '0'} end
  local w = redis.call('HGET', KEYS[3], chosen.sid)
  if w then
    rec = cjson.decode(w)
  else
    list_del(list_key, exps_key, summary_key, chosen.sid)
    if not out[chosen.sid] then n, sum = n - 1, sum - chosen.headroom end
    out[chosen.sid] = true
  end
end

local prev = tonumber(redis.call('GET', KEYS[5]) or '0')
local floor = (old and old.epoch ~= '' and tonumber(old.epoch)) or 0
local epoch = string.format('%.0f', math.max(now_us, prev + 1, floor + 1))
redis.call('SET', KEYS[5], epoch)
local marker = ''
if old then
  redis.call('HSET', KEYS[6], marker_field, epoch)
  marker = epoch
end
redis.call('HSET', list_key, chosen.sid, chosen.expiry .. '\n' .. tostring(chosen.headroom - 1) .. '\n')
summary_add(summary_key, 0, -1)
spent_add(KEYS[11], chosen.sid, headroom_rev(rec))
redis.call('HSET', KEYS[1], id,
  row_encode({ sid = chosen.sid, epoch = epoch, expiry = keep_expiry, host = host, tag = '' }))
redis.call('SADD', KEYS[7], ARGV[10])
return {'forward', chosen.sid, epoch, rec.advertiseUrl, rec.secret, '1', marker, keep_expiry, rec.hostname}
