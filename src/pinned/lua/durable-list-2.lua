--[[
  durable-list: lists an instance's storage in key order, by the key index. Read-only, no fence.

  KEYS[1] data         hash key → value
  KEYS[2] keyIndex     zset of the keys, score 0 (lexicographic order)
  ARGV[1] min          lex min
  ARGV[2] max          lex max
  ARGV[3] count        -1 = all
  ARGV[4] descending   "1" for descending order

  Returns {key1, value1, key2, value2, …}.
]]

local members
if ARGV[4] == '1' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[2], ARGV[2], ARGV[1], 'LIMIT', 0, ARGV[3])
else
  members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
end
local out = {}
for i = 1, #members, 500 do
  local chunk = {}
  for j = i, math.min(i + 499, #members) do chunk[#chunk + 1] = members[j] end
  local values = redis.call('HMGET', KEYS[1], unpack(chunk))
  for j = 1, #chunk do
    if values[j] then
      out[#out + 1] = chunk[j]
      out[#out + 1] = values[j]
    end
  end
end
return out
