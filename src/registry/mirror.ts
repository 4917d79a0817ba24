import type { AppDeps } from "../deps/app-deps.ts";
import { spentPerBucket } from "./headroom.ts";
import { heartbeatBucketCall, unmirrorBucketCall } from "./lua/index.ts";
import type { WorkerRecord } from "./record.ts";

/** What this module uses of the app's dependencies. */
export type MirrorDeps = Pick<AppDeps, "redis" | "keys">;

/**
 * The bucket mirrors of a worker record. Whatever a resolve needs lives in the bucket's hash
 * slot, so register, heartbeat and the drops fan out to every bucket; the calls run
 * concurrently and the adapters batch them (one pipeline per Redis node).
 */

/**
 * Refreshes the record in every bucket and re-adds it to the bucket's namespace lists. Each list
 * entry carries the record's headroom less what the worker spent since it was set: the bucket's own
 * count (read by the script) and, unless this mirror replaces the headroom (a heartbeat: nothing is
 * spent yet), the other buckets' counts as read just before the fan-out.
 */
export async function mirrorEverywhere(
  deps: MirrorDeps,
  record: WorkerRecord,
  json: string,
  options: { headroomReplaced?: boolean } = {},
): Promise<void> {
  const { keys } = deps;
  const spent = options.headroomReplaced ? undefined : await spentPerBucket(deps, record);
  const total = spent?.reduce((sum, n) => sum + n, 0) ?? 0;
  await deps.redis.runMany(
    keys
      .allBuckets()
      .map((bucket) =>
        heartbeatBucketCall(keys, { bucket, record, json, spentElsewhere: spent ? total - spent[bucket]! : 0 }),
      ),
  );
}

/** Removes a dropped session from every bucket, leaving a tombstone generation behind. */
export async function unmirrorEverywhere(
  deps: MirrorDeps,
  record: WorkerRecord,
  tombstoneGen: number | string,
): Promise<void> {
  const { keys } = deps;
  await deps.redis.runMany(
    keys.allBuckets().map((bucket) => unmirrorBucketCall(keys, { bucket, record, generation: tombstoneGen })),
  );
}
