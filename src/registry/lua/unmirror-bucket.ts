import type { Keys } from "../../redis/keys.ts";
import type { ScriptCall } from "../../redis/port.ts";
import { bucketMirrorKeys } from "./bucket-mirror-keys.ts";
import { unmirrorBucketScriptCall } from "./scripts.generated.ts";

export interface UnmirrorBucketInput {
  bucket: number;
  /** The dropped record: its namespace lists are the call's keys. */
  record: { sessionId: string; clientId: string; hostname: string; namespaces: readonly string[] };
  /** The tombstone generation. */
  generation: number | string;
}

/** Removes a dropped session from one bucket, leaving a tombstone (lua/unmirror-bucket-3.lua). */
export function unmirrorBucketCall(keys: Keys, input: UnmirrorBucketInput): ScriptCall {
  const { bucket, record } = input;
  return unmirrorBucketScriptCall(bucketMirrorKeys(keys, bucket, record), {
    sessionId: record.sessionId,
    clientId: record.clientId,
    generation: input.generation,
  });
}
