import type { Keys } from "../../redis/keys.ts";
import type { ScriptCall } from "../../redis/port.ts";
import { markEjectedScriptCall } from "./scripts.generated.ts";

export interface MarkEjectedInput {
  bucket: number;
  sessionId: string;
  /** Ejected until (ms). */
  until: number;
}

/** Mirrors an ejection into one bucket, where resolve reads it (lua/mark-ejected-1.lua). */
export function markEjectedCall(keys: Keys, input: MarkEjectedInput): ScriptCall {
  return markEjectedScriptCall(
    { ejected: keys.ejected(input.bucket) },
    { sessionId: input.sessionId, until: input.until },
  );
}
