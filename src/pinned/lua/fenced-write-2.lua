--[[
  fenced-write: one write to a key of the user's own database, refused when a newer placement
  epoch has written that key: the epoch as a fencing token (FencedRedis, fenced-redis.ts, which
  also refuses an unsupported command before it calls).

  KEYS[1] fence     hash: epoch, the highest placement epoch that wrote the key
  KEYS[2] key       the user's key (same hash slot as the fence)
  ARGV[1] epoch     the writer's quoted placement epoch
  ARGV[2] command   SET, RPUSH, HSET, INCRBY or DEL
  ARGV[3 …] args    the command's arguments after the key

  Returns {1, the command's reply} or {0, the stored epoch}.
]]
--- @include "fence"

local allowed = { SET = true, RPUSH = true, HSET = true, INCRBY = true, DEL = true }
if not allowed[ARGV[2]] then return redis.error_reply('fenced-write: unsupported command ' .. ARGV[2]) end
return {1, redis.call(ARGV[2], KEYS[2], unpack(ARGV, 3))}
