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

/** Drops a session from the fleet-wide record hash and, when it is the client's current one, the client map. */
export const LUA_DROP_SESSION = `
local function drop_session(sessions_key, clients_key, rec)
  redis.call('HDEL', sessions_key, rec.sessionId)
  local owner = redis.call('HGET', clients_key, rec.clientId)
  if owner then
    local _, sid = pair(owner)
    if sid == rec.sessionId then redis.call('HDEL', clients_key, rec.clientId) end
  end
end
`;
