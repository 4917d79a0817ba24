import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * enqueue-message: queues control messages for one session. Messages re-deliver on every
 * heartbeat until acked; the queue expires two lease TTLs after its last write or peek. A
 * message for the same (ns, id) replaces the earlier one, so the owner sees one current order.
 *
 * KEYS[1] queue        hash msgId → message JSON
 * KEYS[2] message ids  counter
 * ARGV[1] lease TTL ms
 * ARGV[2 …] triples: message JSON without msgId ({type, ns, id, deadlineAt: ms | null}), ns, id
 *
 * Returns the msgIds, in order.
 */
const LUA = `
local replace = {}
for i = 2, #ARGV, 3 do replace[ARGV[i + 1] .. '\\n' .. ARGV[i + 2]] = true end
local existing = redis.call('HGETALL', KEYS[1])
for i = 1, #existing, 2 do
  local m = cjson.decode(existing[i + 1])
  if replace[m.ns .. '\\n' .. m.id] then redis.call('HDEL', KEYS[1], existing[i]) end
end
local ids = {}
for i = 2, #ARGV, 3 do
  local msg_id = tostring(redis.call('INCR', KEYS[2]))
  redis.call('HSET', KEYS[1], msg_id, ARGV[i])
  ids[#ids + 1] = msg_id
end
redis.call('PEXPIRE', KEYS[1], 2 * tonumber(ARGV[1]))
return ids
`;

export const enqueueMessageScript = defineScript("enqueue-message", LUA, "0d5c8e1b5003032a437ee3758859669012714ae3");

export interface EnqueueMessageInput {
  sessionId: string;
  leaseTtlMs: number;
  /** Each message's JSON (without msgId) and the (ns, id) whose earlier message it replaces. */
  messages: ReadonlyArray<{ json: string; ns: string; id: string }>;
}

/** The msgIds, in order. */
export async function enqueueMessage(redis: RedisPort, keys: Keys, input: EnqueueMessageInput): Promise<string[]> {
  const args: (string | number)[] = [input.leaseTtlMs];
  for (const { json, ns, id } of input.messages) args.push(json, ns, id);
  return (await redis.run(enqueueMessageScript, [keys.queue(input.sessionId), keys.messageIds], args)) as string[];
}
