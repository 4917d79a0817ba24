import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { resurrectionScriptCall } from "./scripts.generated.ts";

export type ResurrectionInput =
  /** Sets the incarnation (starting a resurrection when it was missing). */
  | { step: "begin"; incarnationId: string }
  /** Saves the next cursor; "0" ends the resurrection. */
  | { step: "advance"; cursor: string };

/**
 * Detects a Redis that lost everything and tracks the paging-in (lua/resurrection-2.lua): the cursor
 * to continue from, or "".
 */
export async function resurrection(redis: RedisPort, keys: Keys, input: ResurrectionInput): Promise<string> {
  const call = resurrectionScriptCall(
    { incarnation: keys.incarnation, resurrectCursor: keys.resurrectCursor },
    input.step === "begin"
      ? { step: "begin", cursor: "", incarnationId: input.incarnationId }
      : { step: "advance", cursor: input.cursor, incarnationId: "" },
  );
  return String(await runCall(redis, call));
}
