import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * resurrection: detects that Redis lost everything and tracks the paging-in of durable
 * instances. The first sweep on a Redis sets the incarnation key; finding it absent means the
 * data is gone (a restart without persistence, a flush), so a resurrection starts at cursor 0.
 *
 * KEYS[1] incarnation       string
 * KEYS[2] resurrect cursor  string: HSCAN cursor of the durable index, absent when idle
 * ARGV[1] "begin" (returns the cursor to continue from, or "" when idle)
 *         or "advance" with ARGV[2] the next cursor ("0" ends the resurrection)
 * ARGV[2] next cursor (advance)
 * ARGV[3] incarnation id (begin)
 *
 * Returns the cursor to continue from, or "".
 */
const LUA = `
if ARGV[1] == 'begin' then
  if redis.call('SET', KEYS[1], ARGV[3], 'NX') then redis.call('SET', KEYS[2], '0') end
  return redis.call('GET', KEYS[2]) or ''
end
if ARGV[2] == '0' then
  redis.call('DEL', KEYS[2])
  return ''
end
redis.call('SET', KEYS[2], ARGV[2])
return ARGV[2]
`;

export const resurrectionScript = defineScript("resurrection", LUA, "d392a6c4e9b58f63823481dba0a5638e86593775");

export type ResurrectionInput =
  /** Sets the incarnation (starting a resurrection when it was missing). */
  | { step: "begin"; incarnationId: string }
  /** Saves the next cursor; "0" ends the resurrection. */
  | { step: "advance"; cursor: string };

/** The cursor to continue from, or "". */
export async function resurrection(redis: RedisPort, keys: Keys, input: ResurrectionInput): Promise<string> {
  const args = input.step === "begin" ? ["begin", "", input.incarnationId] : ["advance", input.cursor, ""];
  return String(await redis.run(resurrectionScript, [keys.incarnation, keys.resurrectCursor], args));
}
