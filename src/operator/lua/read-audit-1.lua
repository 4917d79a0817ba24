--[[
  read-audit: one batch of the audit trail, newest first, from before an entry (exclusive),
  keeping the entries of a kind and a type, and that name one of some namespaces, when asked:
  an entry the caller would drop is not sent. Exclusive by hand, not with XREVRANGE's
  "(" (Redis 6.2+), so that every Redis the port reaches reads it alike.

  KEYS[1] audit     stream of audit entries
  ARGV[1] before    an entry id: only older entries; "" for the newest
  ARGV[2] count     entries to look at, at most
  ARGV[3] kind      "action" | "event", or "" for both
  ARGV[4] type      an entry type, or "" for every type
  ARGV[5] names     namespaces, one per line: only entries whose target names one of them (a
                    superset of what the credential sees, judged exactly by the caller); "" for all

  Returns {next, id, {field, value, …}, id, {…}, …}: the entries kept, newest first; `next` is the
  id of the last entry looked at when older ones remain, else "".
]]

local before, count = ARGV[1], tonumber(ARGV[2])
-- Each namespace as a JSON string, as JSON.stringify writes it and as cjson does ("\/").
local quoted = {}
for ns in string.gmatch(ARGV[5], '[^\n]+') do
  quoted[#quoted + 1] = '"' .. ns .. '"'
  quoted[#quoted + 1] = '"\\/' .. string.sub(ns, 2) .. '"'
end
local function names_one(target)
  if #quoted == 0 then return true end
  for _, q in ipairs(quoted) do
    if string.find(target, q, 1, true) then return true end
  end
  return false
end
local top = '+'
if before ~= '' then top = before end
-- One more than asked for (two past `before`, which XREVRANGE includes): whether older ones remain.
local batch = redis.call('XREVRANGE', KEYS[1], top, '-', 'COUNT', count + 2)
local out = { '' }
local seen, last = 0, ''
for _, entry in ipairs(batch) do
  if entry[1] ~= before then
    if seen == count then
      out[1] = last
      break
    end
    seen, last = seen + 1, entry[1]
    local fields, kind, kind_type, target = entry[2], '', '', ''
    for i = 1, #fields, 2 do
      local f = fields[i]
      if f == 'kind' then kind = fields[i + 1] elseif f == 'type' then kind_type = fields[i + 1]
      elseif f == 'target' then target = fields[i + 1] end
    end
    if (ARGV[3] == '' or ARGV[3] == kind) and (ARGV[4] == '' or ARGV[4] == kind_type) and names_one(target) then
      out[#out + 1] = entry[1]
      out[#out + 1] = fields
    end
  end
end
return out
