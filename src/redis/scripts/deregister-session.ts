import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_DROP_SESSION, LUA_EXPIRY_INDEX, LUA_NOW, LUA_PAIR } from "./lua-lib.ts";
import { sessionScriptKeys } from "./session-keys.ts";

/**
 * deregister-session: drops a live session's record, its client mapping and its control queue,
 * and mints the generation the bucket tombstones carry. Placements are left to dead-owner
 * eviction.
 *
 * KEYS[1] sessions     hash sessionId → record JSON
 * KEYS[2] clients      hash clientId → account \n sessionId
 * KEYS[3] queue        hash msgId → message JSON
 * KEYS[4] generation   counter of registrations
 * KEYS[5] session expiries  zset sessionId → expiry (the index over KEYS[1])
 * ARGV[1] sessionId
 *
 * Returns {"ok", record JSON, generation} or {"unknown"} (no record, or expired).
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_DROP_SESSION}
local raw = redis.call('HGET', KEYS[1], ARGV[1])
if not raw then return {'unknown'} end
local rec = cjson.decode(raw)
if rec.expiry <= now_ms() then return {'unknown'} end
drop_session(KEYS[1], KEYS[5], KEYS[2], rec)
redis.call('DEL', KEYS[3])
return {'ok', raw, tostring(redis.call('INCR', KEYS[4]))}
`;

export const deregisterSessionScript = defineScript(
  "deregister-session",
  LUA,
  "eeef20a1f9b5a983295c48ab1c04ed23f6b2d364",
);

export interface DeregisterSessionInput {
  sessionId: string;
}

export type DeregisterSessionResult =
  /** The dropped record's JSON and the generation its bucket tombstones carry. */
  { kind: "ok"; json: string; generation: string } | { kind: "unknown" };

export async function deregisterSession(
  redis: RedisPort,
  keys: Keys,
  input: DeregisterSessionInput,
): Promise<DeregisterSessionResult> {
  const { sessionId } = input;
  const reply = (await redis.run(
    deregisterSessionScript,
    sessionScriptKeys(keys, "deregister-session", { sessionId }),
    [sessionId],
  )) as string[];
  if (reply[0] !== "ok") return { kind: "unknown" };
  return { kind: "ok", json: reply[1]!, generation: reply[2]! };
}
