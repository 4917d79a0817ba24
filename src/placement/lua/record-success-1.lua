--[[
  record-success: a forward that did not fail breaks the worker's run of consecutive failures
  (its ejection count stays, so a relapse is ejected for longer).

  KEYS[1] outliers    hash sessionId → consecutive \n ejections \n ejected-until ms
  ARGV[1] sessionId

  Returns 1 when a run was reset, else 0.
]]

local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur or string.sub(cur, 1, 2) == '0\n' then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '0' .. string.sub(cur, (string.find(cur, '\n', 1, true))))
return 1
