--[[
  read-audit: one batch of the audit trail, newest first, from before an entry (exclusive),
  keeping the entries of a kind and a type when asked. Exclusive by hand, not with XREVRANGE's
  "(" (Redis 6.2+), so that every Redis the port reaches reads it alike.

  KEYS[1] audit     stream of audit entries
  ARGV[1] before    an entry id: only older entries; "" for the newest
  ARGV[2] count     entries to look at, at most
  ARGV[3] kind      "action" | "event", or "" for both
  ARGV[4] type      an entry type, or "" for every type

  Returns {next, id, {field, value, …}, id, {…}, …}: the entries kept, newest first; `next` is the
  id of the last entry looked at when older ones remain, else "".
]]

local before, count = ARGV[1], tonumber(ARGV[2])
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
    local fields, kind, kind_type = entry[2], '', ''
    for i = 1, #fields, 2 do
      if fields[i] == 'kind' then kind = fields[i + 1] elseif fields[i] == 'type' then kind_type = fields[i + 1] end
    end
    if (ARGV[3] == '' or ARGV[3] == kind) and (ARGV[4] == '' or ARGV[4] == kind_type) then
      out[#out + 1] = entry[1]
      out[#out + 1] = fields
    end
  end
end
return out
