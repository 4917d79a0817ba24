--[[
  An expiry index: a zset sessionId → expiry beside a hash of record JSON, so that pruning reads
  only the records it prunes. Every write of the hash updates the index (index_set, index_del); a
  count that differs (an older layout, an edit behind the scripts' back) rebuilds it in one pass
  (index_ready). index_dead(hash_key, index_key, now, lease) answers {sid, rec} of every record
  whose expiry + lease < now.
]]

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
      if r.expiry + lease < now then
        dead[#dead + 1] = { sid = sid, rec = r }
      else
        redis.call('ZADD', index_key, r.expiry, sid)
      end
    end
  end
  return dead
end
