import type { AppDeps } from "../deps.ts";
import type { Keys } from "../redis/keys.ts";
import { heartbeatBucket, unmirrorBucket } from "../redis/scripts/index.ts";
import { spentPerBucket } from "./headroom.ts";
import type { WorkerRecord } from "./record.ts";

/**
 * The bucket mirrors of a worker record. Whatever a resolve needs lives in the bucket's hash
 * slot, so register, heartbeat and the drops fan out to every bucket; the calls run
 * concurrently and the adapters batch them (one pipeline per Redis node).
 */

/** The bucket's namespace lists that a worker belongs to, three keys each (list, expiries, summary). */
export function namespaceListKeys(keys: Keys, bucket: number, record: Pick<WorkerRecord, "hostname" | "namespaces">): string[] {
  return record.namespaces.flatMap((ns) => keys.nsListKeys(bucket, record.hostname, ns));
}

/**
 * Refreshes the record in every bucket and re-adds it to the bucket's namespace lists. Each list
 * entry carries the record's headroom less what the worker spent since it was set: the bucket's own
 * count (read by the script) and, unless this mirror replaces the headroom (a heartbeat: nothing is
 * spent yet), the other buckets' counts as read just before the fan-out.
 */
export async function mirrorEverywhere(
  deps: AppDeps,
  record: WorkerRecord,
  json: string,
  options: { headroomReplaced?: boolean } = {},
): Promise<void> {
  const { keys } = deps;
  const spent = options.headroomReplaced ? undefined : await spentPerBucket(deps, record);
  const total = spent?.reduce((sum, n) => sum + n, 0) ?? 0;
  await deps.redis.runMany(
    keys.allBuckets().map((b) => ({
      script: heartbeatBucket,
      keys: [keys.workers(b), keys.clients(b), keys.workerExpiries(b), keys.spent(b), ...namespaceListKeys(keys, b, record)],
      args: [record.sessionId, json, spent ? total - spent[b]! : 0],
    })),
  );
}

/** Removes a dropped session from every bucket, leaving a tombstone generation behind. */
export async function unmirrorEverywhere(deps: AppDeps, record: WorkerRecord, tombstoneGen: number | string): Promise<void> {
  const { keys } = deps;
  await deps.redis.runMany(
    keys.allBuckets().map((b) => ({
      script: unmirrorBucket,
      keys: [keys.workers(b), keys.clients(b), keys.workerExpiries(b), ...namespaceListKeys(keys, b, record)],
      args: [record.sessionId, record.clientId, tombstoneGen],
    })),
  );
}
