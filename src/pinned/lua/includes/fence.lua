--[[
  The fence every writing durability script starts with, over the instance's meta hash: KEYS[1]
  is the meta hash, ARGV[1] the quoted placement epoch. A lower epoch than the stored one is
  refused with {0, stored}; a higher one is stored. Epochs are compared as decimal strings
  (length, then bytes) because they may exceed 2^53. All KEYS of one script are keys of one
  instance (the `{ns/id}` hash tag), so each runs on one slot of a Redis Cluster.
]]

local function norm(s)
  local t = string.gsub(s, '^0+', '')
  if t == '' then return '0' end
  return t
end
local function cmp(a, b)
  a = norm(a) b = norm(b)
  if #a ~= #b then if #a < #b then return -1 else return 1 end end
  if a == b then return 0 end
  if a < b then return -1 else return 1 end
end
local stored = redis.call('HGET', KEYS[1], 'epoch')
if stored then
  local c = cmp(ARGV[1], stored)
  if c < 0 then return {0, stored} end
  if c > 0 then redis.call('HSET', KEYS[1], 'epoch', ARGV[1]) end
else
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
end
