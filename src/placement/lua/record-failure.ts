import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { recordFailureScriptCall } from "./scripts.generated.ts";

export interface RecordFailureInput {
  sessionId: string;
  /** Consecutive failures that eject. */
  ejectAfter: number;
  baseEjectionMs: number;
  maxEjectionMs: number;
}

/**
 * Counts a failed forward toward outlier ejection (lua/record-failure-2.lua): the ejected-until
 * time (ms) when this failure ejected the worker, else 0.
 */
export async function recordFailure(redis: RedisPort, keys: Keys, input: RecordFailureInput): Promise<number> {
  const { sessionId, ejectAfter, baseEjectionMs, maxEjectionMs } = input;
  const call = recordFailureScriptCall(
    { outliers: keys.outliers, sessions: keys.sessions },
    { sessionId, ejectAfter, baseEjectionMs, maxEjectionMs },
  );
  return Number(await runCall(redis, call));
}
