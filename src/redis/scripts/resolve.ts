import { defineScript } from "../script.ts";
import { LUA_ROW } from "./lua-lib.ts";

/**
 * resolve: the placement decision for one (env, namespace, id), atomic in the id's bucket.
 *   1. a row whose owner is live and whose wind-down has not passed forwards to its owner;
 *      an owner of another hostname applies the env's takeover (deny, or a wind_down fence);
 *   2. no namespace list → unknown-ns;
 *   3. boot_time SET NX; inside boot_time + lease → quarantine (then binding quarantine);
 *   4. candidates: live, not draining, not degraded, not excluded, expiry - now ≥ min(5000,
 *      lease/3); outlier-ejected ones only when nothing else remains; none → no-backends;
 *   5. affinity: the attested caller's own session, else rendezvous on the affinity key, while
 *      the preferred worker's headroom ≥ mean / balance factor;
 *   6. otherwise power of two choices on headroom;
 *   7. a new epoch max(now µs, previous + 1, old row's + 1); the old row is listed on the
 *      overwritten hash; the chosen entry's headroom is decremented; the row is written.
 *
 * KEYS[1] placements   hash id → row
 * KEYS[2] ns list      hash sessionId → expiry \n headroom \n flags
 * KEYS[3] workers      hash sessionId → record JSON
 * KEYS[4] boot_time    string ms
 * KEYS[5] epoch        string: last epoch minted in the bucket
 * KEYS[6] overwritten  hash env \n ns \n id → epoch of the re-placement
 * KEYS[7] spaces       set of env \n ns with placements in the bucket
 * KEYS[8] ejected      hash sessionId → ejected-until ms
 * ARGV[1] id
 * ARGV[2] lease TTL ms
 * ARGV[3] request hostname ("" in single mode)
 * ARGV[4] the env's takeover: "wind_down" | "deny" ("" in single mode)
 * ARGV[5] excluded sessionId or ""
 * ARGV[6] attested caller's sessionId or ""
 * ARGV[7] affinity key hash (uint32) or "" to skip key affinity
 * ARGV[8] balance factor
 * ARGV[9] binding quarantine until (ms) or ""
 * ARGV[10] overwritten field: env \n ns \n id
 * ARGV[11] spaces member: env \n ns
 * ARGV[12], ARGV[13] two random uint32 for power of two choices
 *
 * Returns {"forward", sessionId, epoch, advertiseUrl, secret, fresh "0"|"1", overwritten
 *          marker epoch or "", surviving wind-down expiry or "", owner hostname}
 *      or {"refuse", outcome, remaining ms, owner sessionId?, "1" when a takeover fence was just set,
 *          the fence (Redis-clock ms)?}.
 */
const LUA = `${LUA_ROW}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local id, lease, host = ARGV[1], tonumber(ARGV[2]), ARGV[3]

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
        local marker = redis.call('HGET', KEYS[6], ARGV[10]) or ''
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

local ejected = {}
local ej = redis.call('HGETALL', KEYS[8])
for i = 1, #ej, 2 do
  if tonumber(ej[i + 1]) > now then ejected[ej[i]] = true end
end
local min_left = math.min(5000, lease / 3)
local cands, spare = {}, {}
local list = redis.call('HGETALL', KEYS[2])
for i = 1, #list, 2 do
  local sid, e = list[i], list[i + 1]
  local a = string.find(e, '\\n', 1, true)
  local b = string.find(e, '\\n', a + 1, true)
  local expiry = tonumber(string.sub(e, 1, a - 1))
  if expiry + lease < now then
    redis.call('HDEL', KEYS[2], sid)
  elseif b == #e and expiry - now >= min_left and sid ~= ARGV[5] then
    local c = { sid = sid, expiry = string.sub(e, 1, a - 1), headroom = tonumber(string.sub(e, a + 1, b - 1)) }
    if ejected[sid] then spare[#spare + 1] = c else cands[#cands + 1] = c end
  end
end
if #cands == 0 then cands = spare end
if #cands == 0 then return {'refuse', 'no-backends', '0'} end

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

local function pick()
  local sum = 0
  for _, c in ipairs(cands) do sum = sum + c.headroom end
  local floor_headroom = (sum / #cands) / tonumber(ARGV[8])
  if ARGV[6] ~= '' then
    for _, c in ipairs(cands) do
      if c.sid == ARGV[6] and c.headroom >= floor_headroom then return c end
    end
  elseif ARGV[7] ~= '' then
    local key = tonumber(ARGV[7])
    local best, best_score
    for _, c in ipairs(cands) do
      local seed = tonumber(string.sub(c.sid, 1, 8), 16) or 0
      local score = mix(bit.bxor(key, seed) % 4294967296)
      if not best or score > best_score or (score == best_score and c.sid < best.sid) then best, best_score = c, score end
    end
    if best.headroom >= floor_headroom then return best end
  end
  local n = #cands
  local i1 = tonumber(ARGV[12]) % n + 1
  local i2 = tonumber(ARGV[13]) % n + 1
  if n > 1 and i2 == i1 then i2 = i1 % n + 1 end
  if cands[i2].headroom > cands[i1].headroom then return cands[i2] end
  return cands[i1]
end

-- A list entry whose mirror is gone (a session replaced by a registration with other namespaces)
-- is dropped and the choice made again, before anything is written.
local chosen, rec
while not rec do
  chosen = pick()
  local w = redis.call('HGET', KEYS[3], chosen.sid)
  if w then
    rec = cjson.decode(w)
  else
    redis.call('HDEL', KEYS[2], chosen.sid)
    for i, c in ipairs(cands) do
      if c == chosen then table.remove(cands, i) break end
    end
    if #cands == 0 then return {'refuse', 'no-backends', '0'} end
  end
end

local prev = tonumber(redis.call('GET', KEYS[5]) or '0')
local floor = (old and old.epoch ~= '' and tonumber(old.epoch)) or 0
local epoch = string.format('%.0f', math.max(now_us, prev + 1, floor + 1))
redis.call('SET', KEYS[5], epoch)
local marker = ''
if old then
  redis.call('HSET', KEYS[6], ARGV[10], epoch)
  marker = epoch
end
redis.call('HSET', KEYS[2], chosen.sid, chosen.expiry .. '\\n' .. tostring(chosen.headroom - 1) .. '\\n')
redis.call('HSET', KEYS[1], id, row_encode({ sid = chosen.sid, epoch = epoch, expiry = keep_expiry, host = host, tag = '' }))
redis.call('SADD', KEYS[7], ARGV[11])
return {'forward', chosen.sid, epoch, rec.advertiseUrl, rec.secret, '1', marker, keep_expiry, rec.hostname}
`;

export const resolve = defineScript("resolve", LUA, "efb4f7042948b1933fdf102817173cb59d46de3e");
