import { defineScript } from "../script.ts";

/**
 * enqueue-message: queues a control message for a session. Messages re-deliver on every
 * heartbeat until acked; the queue expires two lease TTLs after its last write or peek.
 * A message for the same (ns, id) replaces the earlier one, so the owner sees one current order.
 *
 * KEYS[1] queue        hash msgId → message JSON
 * KEYS[2] message ids  counter
 * ARGV[1] message JSON without msgId: {type, ns, id, deadlineAt: ms | null}
 * ARGV[2] lease TTL ms
 * ARGV[3] ns
 * ARGV[4] id
 *
 * Returns the msgId.
 */
const LUA = `
local existing = redis.call('HGETALL', KEYS[1])
for i = 1, #existing, 2 do
  local m = cjson.decode(existing[i + 1])
  if m.ns == ARGV[3] and m.id == ARGV[4] then redis.call('HDEL', KEYS[1], existing[i]) end
end
local msg_id = tostring(redis.call('INCR', KEYS[2]))
redis.call('HSET', KEYS[1], msg_id, ARGV[1])
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[2]))
return msg_id
`;

export const enqueueMessage = defineScript("enqueue-message", LUA, "0f45788cd3410b1bf3dcacea779c854e0573e1e4");
