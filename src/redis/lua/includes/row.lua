--[[
  A placement row is one string: `sessionId \n epoch \n expiry \n hostname \n tag` (empty fields
  for absent values; the tag is last so it may hold anything). row_decode(s) gives
  {sid, epoch, expiry, host, tag}; row_encode(r) writes one back.
]]

local function row_decode(s)
  local f, pos = {}, 1
  for i = 1, 4 do
    local j = string.find(s, '\n', pos, true)
    if not j then f[i] = string.sub(s, pos); pos = nil; break end
    f[i] = string.sub(s, pos, j - 1)
    pos = j + 1
  end
  return { sid = f[1] or '', epoch = f[2] or '', expiry = f[3] or '', host = f[4] or '',
           tag = pos and string.sub(s, pos) or '' }
end
local function row_encode(r)
  return r.sid .. '\n' .. r.epoch .. '\n' .. r.expiry .. '\n' .. r.host .. '\n' .. r.tag
end
