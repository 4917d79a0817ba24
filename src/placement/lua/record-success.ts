import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { recordSuccessScriptCall } from "./scripts.generated.ts";

export interface RecordSuccessInput {
  sessionId: string;
}

/** Breaks a worker's run of failures (lua/record-success-1.lua); true when a run was reset. */
export async function recordSuccess(redis: RedisPort, keys: Keys, input: RecordSuccessInput): Promise<boolean> {
  const call = recordSuccessScriptCall({ outliers: keys.outliers }, { sessionId: input.sessionId });
  return Number(await runCall(redis, call)) === 1;
}
