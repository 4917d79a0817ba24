--[[
  ns-list-snapshot: reads one bucket's namespace list with the mirrors of its sessions, for
  copy-ns-list to seed a bucket that lost its list ("a bucket missing a namespace list copies the
  previous bucket's"). Writes nothing. Sessions listed without a mirror are left out.

  KEYS[1] nsList    hash sessionId → expiry \n headroom \n flags
  KEYS[2] workers   hash sessionId → record JSON

  Returns {sessionId, record JSON, …}: empty when the bucket has no such list.
]]

local out = {}
for _, sid in ipairs(redis.call('HKEYS', KEYS[1])) do
  local json = redis.call('HGET', KEYS[2], sid)
  if json then
    out[#out + 1] = sid
    out[#out + 1] = json
  end
end
return out
