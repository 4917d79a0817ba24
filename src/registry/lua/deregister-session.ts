import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { deregisterSessionScriptCall } from "./scripts.generated.ts";
import { sessionKeys } from "./session-keys.ts";

export interface DeregisterSessionInput {
  sessionId: string;
}

export type DeregisterSessionResult =
  /** The dropped record's JSON and the generation its bucket tombstones carry. */
  { kind: "ok"; json: string; generation: string } | { kind: "unknown" };

/** Drops a live session's record, client mapping and control queue (lua/deregister-session-5.lua). */
export async function deregisterSession(
  redis: RedisPort,
  keys: Keys,
  input: DeregisterSessionInput,
): Promise<DeregisterSessionResult> {
  const { sessionId } = input;
  const call = deregisterSessionScriptCall({ ...sessionKeys(keys), queue: keys.queue(sessionId) }, { sessionId });
  const reply = (await runCall(redis, call)) as string[];
  if (reply[0] !== "ok") return { kind: "unknown" };
  return { kind: "ok", json: reply[1]!, generation: reply[2]! };
}
