import type { Keys } from "../../redis/keys.ts";
import { bucketMirrorKeys } from "./bucket-mirror-keys.ts";
import { type RebindRowsCall, rebindPairs } from "./rebind-rows.ts";
import { registerBucketScriptCall } from "./scripts.generated.ts";

export interface RegisterBucketInput {
  bucket: number;
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored (carries clientId and gen). */
  json: string;
  leaseTtlMs: number;
  /** The session whose rows are reclaimed, "" for none. */
  prevSessionId: string;
  /** The first chunk (at most REBIND_CHUNK_IDS) of the instances held in this bucket, each with its namespace's env. */
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>;
}

/**
 * The per-bucket half of POST /registry/register (lua/register-bucket-3.lua); its reply's rebind
 * part reads with parseRebindRows (after its status).
 */
export function registerBucketCall(keys: Keys, input: RegisterBucketInput): RebindRowsCall {
  const { bucket, record } = input;
  const mirror = bucketMirrorKeys(keys, bucket, record);
  const headLength = 3 + mirror.nsLists.length;
  const { placements, placementNs, pairs } = rebindPairs(keys, bucket, input.rows, headLength);
  const call = registerBucketScriptCall(
    { ...mirror, placements },
    {
      sessionId: record.sessionId,
      json: input.json,
      leaseTtlMs: input.leaseTtlMs,
      listCount: record.namespaces.length,
      prevSessionId: input.prevSessionId,
      pairs,
    },
  );
  return { ...call, placementNs, headLength };
}
