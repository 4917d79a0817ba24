import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { sessionKeys } from "../../registry/lua/session-keys.ts";
import { applyDrainScriptCall } from "./scripts.generated.ts";

export interface ApplyDrainInput {
  clientId: string;
  /** "cordon", a deadline (ms), or "" to revoke. */
  value: string;
  /** TTL of the drain key (ms), 0 for none. */
  ttlMs: number;
}

export interface ApplyDrainResult {
  /** Whether the client had a drain before. */
  existed: boolean;
  /** The client's record JSON as drained, "" when it has none. */
  json: string;
}

/** Writes (or revokes) a client's drain and applies it to its record at once (lua/apply-drain-4.lua). */
export async function applyDrain(redis: RedisPort, keys: Keys, input: ApplyDrainInput): Promise<ApplyDrainResult> {
  const { clientId, value, ttlMs } = input;
  const call = applyDrainScriptCall({ ...sessionKeys(keys), drain: keys.drain(clientId) }, { clientId, value, ttlMs });
  const [existed, json] = (await runCall(redis, call)) as [number, string];
  return { existed: Number(existed) === 1, json };
}
