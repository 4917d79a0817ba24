import type { Keys } from "../../redis/keys.ts";
import type { ScriptCall } from "../../redis/port.ts";
import { bucketMirrorKeys } from "./bucket-mirror-keys.ts";
import { heartbeatBucketScriptCall } from "./scripts.generated.ts";

export interface HeartbeatBucketInput {
  bucket: number;
  /** The record mirrored: its namespace lists are the call's keys. */
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored. */
  json: string;
  /** Placements spent in other buckets under the record's headroom revision (0 for a heartbeat). */
  spentElsewhere: number;
}

/** Refreshes a session's mirror in one bucket and its namespace lists (lua/heartbeat-bucket-4.lua). */
export function heartbeatBucketCall(keys: Keys, input: HeartbeatBucketInput): ScriptCall {
  const { bucket, record } = input;
  return heartbeatBucketScriptCall(
    { ...bucketMirrorKeys(keys, bucket, record), spent: keys.spent(bucket) },
    { sessionId: record.sessionId, json: input.json, spentElsewhere: input.spentElsewhere },
  );
}
