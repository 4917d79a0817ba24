--[[
  list_entry(rec): a namespace list entry, `expiry \n headroom \n flags` (flags: "d" draining,
  "g" degraded), the compact view of a worker that candidate selection reads without decoding
  JSON.
]]

local function list_entry(rec)
  local flags = ''
  if rec.draining then flags = flags .. 'd' end
  if rec.degradedSince ~= nil and rec.degradedSince ~= cjson.null then flags = flags .. 'g' end
  return string.format('%.0f', rec.expiry) .. '\n' .. tostring(rec.headroom) .. '\n' .. flags
end
