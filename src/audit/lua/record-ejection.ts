import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { recordEjectionScriptCall } from "./scripts.generated.ts";

export interface RecordEjectionInput {
  cap: number;
  sessionId: string;
  /** The ejection's end (Redis-clock ms). */
  ejectedUntil: number;
}

/**
 * Records a worker's ejection in the audit trail, after the re-admission of its previous one
 * when that was not recorded yet (lua/record-ejection-4.lua): false when the worker has no record.
 */
export async function recordEjection(redis: RedisPort, keys: Keys, input: RecordEjectionInput): Promise<boolean> {
  const call = recordEjectionScriptCall(
    { audit: keys.audit, auditEjections: keys.auditEjections, sessions: keys.sessions, outliers: keys.outliers },
    input,
  );
  return Number(await runCall(redis, call)) === 1;
}
