import type { Keys } from "../../redis/keys.ts";
import type { RedisReply, ScriptCall } from "../../redis/port.ts";
import { gcBucketScriptCall } from "./scripts.generated.ts";

export interface GcBucketInput {
  bucket: number;
  leaseTtlMs: number;
}

/** The per-bucket GC of mirrors dead for longer than a lease (lua/gc-bucket-2.lua). */
export function gcBucketCall(keys: Keys, input: GcBucketInput): ScriptCall {
  const { bucket, leaseTtlMs } = input;
  return gcBucketScriptCall(
    { workers: keys.workers(bucket), workerExpiries: keys.workerExpiries(bucket) },
    { leaseTtlMs },
  );
}

/** The number of mirrors pruned. */
export function parseGcBucket(reply: RedisReply): number {
  return Number(reply);
}
