--[[
  The namespace list and its two index keys, kept in step by every script that writes the list,
  so that a new placement costs O(log n) in a namespace of n workers instead of a scan:

    list       hash sessionId → `expiry \n headroom \n flags` (flags: "d" draining, "g" degraded)
    expiries   zset sessionId → expiry: dead, expiring and random live entries by range and rank
    summary    hash: n, sum   count and headroom total of the unflagged entries;
                     v        bumped whenever the candidate set may have grown (an entry added,
                              unflagged, or renewed from within 5 s of its expiry);
                     a:{slot} a cached rendezvous winner: sessionId \n v \n valid-until ms

  Anything that edits the list behind these helpers' backs is repaired on the next write or
  resolve: a summary without `n`, or a list whose length differs from its index, is rebuilt
  from the list in one pass (list_ready). list_set and list_del write an entry and both indexes;
  entry_parse reads an entry; summary_add moves the count and sum.
]]

local function entry_parse(e)
  local a = string.find(e, '\n', 1, true)
  local b = a and string.find(e, '\n', a + 1, true)
  if not b then return nil end
  return { expiry = tonumber(string.sub(e, 1, a - 1)) or 0, expiry_s = string.sub(e, 1, a - 1),
           headroom = tonumber(string.sub(e, a + 1, b - 1)) or 0, clean = b == #e }
end
local function num_s(x) return string.format('%.17g', x) end

local function list_rebuild(list_key, exps_key, summary_key)
  local all = redis.call('HGETALL', list_key)
  redis.call('DEL', exps_key)
  local n, sum = 0, 0
  for i = 1, #all, 2 do
    local e = entry_parse(all[i + 1])
    if e then
      redis.call('ZADD', exps_key, e.expiry, all[i])
      if e.clean then n, sum = n + 1, sum + e.headroom end
    else
      redis.call('HDEL', list_key, all[i])
    end
  end
  local v = redis.call('HINCRBY', summary_key, 'v', 1)
  redis.call('DEL', summary_key)
  if #all > 0 then redis.call('HSET', summary_key, 'n', n, 'sum', num_s(sum), 'v', v) end
end

local function list_ready(list_key, exps_key, summary_key)
  if redis.call('HEXISTS', summary_key, 'n') == 0 or redis.call('HLEN', list_key) ~= redis.call('ZCARD', exps_key) then
    list_rebuild(list_key, exps_key, summary_key)
  end
end

-- Also writes n and sum when the summary has none yet: a list whose first entry is flagged still
-- gets its summary, so a resolve never has to rebuild (and so write) on a refusal.
local function summary_add(summary_key, dn, dsum)
  local s = redis.call('HMGET', summary_key, 'n', 'sum')
  if dn == 0 and dsum == 0 and s[1] then return end
  redis.call('HSET', summary_key, 'n', (tonumber(s[1]) or 0) + dn, 'sum', num_s((tonumber(s[2]) or 0) + dsum))
end

local function list_set(list_key, exps_key, summary_key, sid, entry, now)
  list_ready(list_key, exps_key, summary_key)
  local new = entry_parse(entry)
  local raw = redis.call('HGET', list_key, sid)
  local old = raw and entry_parse(raw)
  local dn, dsum = 0, 0
  if old and old.clean then dn, dsum = -1, -old.headroom end
  if new.clean then dn, dsum = dn + 1, dsum + new.headroom end
  redis.call('HSET', list_key, sid, entry)
  redis.call('ZADD', exps_key, new.expiry, sid)
  summary_add(summary_key, dn, dsum)
  if new.clean and (not old or not old.clean or old.expiry < now + 5000) then
    redis.call('HINCRBY', summary_key, 'v', 1)
  end
end

local function list_del(list_key, exps_key, summary_key, sid)
  local raw = redis.call('HGET', list_key, sid)
  if not raw then return end
  redis.call('HDEL', list_key, sid)
  redis.call('ZREM', exps_key, sid)
  if redis.call('EXISTS', list_key) == 0 then
    redis.call('DEL', exps_key, summary_key)
    return
  end
  local old = entry_parse(raw)
  if old and old.clean then summary_add(summary_key, -1, -old.headroom) end
end
