import type { RedisPort, RedisReply, ScriptCall } from "../port.ts";

/** Runs one script call (a generated `<name>ScriptCall`) through the port. */
export function runCall(redis: RedisPort, call: ScriptCall): Promise<RedisReply> {
  return redis.run(call.script, call.keys, call.args);
}
