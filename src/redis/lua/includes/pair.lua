--[[
  pair(s): splits an `a \n b` stored value (client owners, bindings) into two strings (b is ""
  when there is no newline).
]]

local function pair(s)
  local j = string.find(s, '\n', 1, true)
  if not j then return s, '' end
  return string.sub(s, 1, j - 1), string.sub(s, j + 1)
end
