--[[
  page-in-placeholder: after Redis lost its placements, writes an ownerless placeholder row for
  a durable instance (epoch absent, hostname = resurrection target) and lists it on the
  overwritten hash, so the durability sweep places and wakes it. An existing row is left alone.

  KEYS[1] placements    hash id → row
  KEYS[2] overwritten   hash env \n ns \n id → epoch
  KEYS[3] spaces        set of env \n ns
  ARGV[1] id
  ARGV[2] hostname      "" in single mode
  ARGV[3] field         overwritten field env \n ns \n id
  ARGV[4] space         spaces member env \n ns

  Returns 1 when a placeholder was written, else 0.
]]

if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], '\n\n\n' .. ARGV[2] .. '\n')
redis.call('HSETNX', KEYS[2], ARGV[3], '0')
redis.call('SADD', KEYS[3], ARGV[4])
return 1
