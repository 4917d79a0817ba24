--[[
  drop_session(sessions_key, index_key, clients_key, rec): drops a session from the fleet-wide
  record hash and its index and, when it is the client's current one, the client map.
]]
--- @include "pair"
--- @include "expiry-index"

local function drop_session(sessions_key, index_key, clients_key, rec)
  index_del(sessions_key, index_key, rec.sessionId)
  local owner = redis.call('HGET', clients_key, rec.clientId)
  if owner then
    local _, sid = pair(owner)
    if sid == rec.sessionId then redis.call('HDEL', clients_key, rec.clientId) end
  end
end
