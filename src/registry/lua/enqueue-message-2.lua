--[[
  enqueue-message: queues control messages for one session. Messages re-deliver on every
  heartbeat until acked; the queue expires two lease TTLs after its last write or peek. A
  message for the same (ns, id) replaces the earlier one, so the owner sees one current order.

  KEYS[1] queue        hash msgId → message JSON
  KEYS[2] messageIds   counter
  ARGV[1] leaseTtlMs   lease TTL ms
  ARGV[2 …] messages   triples: message JSON without msgId ({type, ns, id, deadlineAt: ms | null}), ns, id

  Returns the msgIds, in order.
]]

local replace = {}
for i = 2, #ARGV, 3 do replace[ARGV[i + 1] .. '\n' .. ARGV[i + 2]] = true end
local existing = redis.call('HGETALL', KEYS[1])
for i = 1, #existing, 2 do
  local m = cjson.decode(existing[i + 1])
  if replace[m.ns .. '\n' .. m.id] then redis.call('HDEL', KEYS[1], existing[i]) end
end
local ids = {}
for i = 2, #ARGV, 3 do
  local msg_id = tostring(redis.call('INCR', KEYS[2]))
  redis.call('HSET', KEYS[1], msg_id, ARGV[i])
  ids[#ids + 1] = msg_id
end
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
return ids
