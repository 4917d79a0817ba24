import type { AppDeps } from "../deps/app-deps.ts";
import { copyNsList, nsListSnapshot, nsListSnapshotCall, parseNsListSnapshot } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type NsListCopyDeps = Pick<AppDeps, "redis" | "keys" | "log">;

/**
 * How many buckets back a resolve looks for a namespace list to copy into a bucket that has none.
 * A bucket loses its keys with its Redis node (or an eviction, or a hand edit); the bucket before
 * it is then nearly always whole, and the bound keeps a namespace that nobody serves (the usual
 * reason for "unknown namespace") down to this many reads.
 */
export const NS_LIST_COPY_REACH = 8;

/**
 * "A bucket missing a namespace list copies the previous bucket's": reads the list of
 * {hostname}{ns}, with its sessions' record mirrors, from bucket − 1 (mod shards), else from the
 * nearest of the buckets before that within NS_LIST_COPY_REACH, and writes it into `bucket` while
 * the list is still missing there. Two slots, so a read then an idempotent write, not one script.
 * Returns the bucket copied from, or undefined when no bucket in reach has the list.
 */
export async function copyPreviousNamespaceList(
  deps: NsListCopyDeps,
  bucket: number,
  hostname: string,
  ns: string,
): Promise<number | undefined> {
  const { keys, redis } = deps;
  const shards = keys.shards;
  const reach = Math.min(shards - 1, NS_LIST_COPY_REACH);
  if (reach < 1) return undefined;
  const back = (d: number) => (((bucket - d) % shards) + shards) % shards;

  // The previous bucket first: when one bucket lost its keys, that is the only read.
  let from = back(1);
  let source = await nsListSnapshot(redis, keys, { bucket: from, hostname, ns });
  if (source.length === 0 && reach > 1) {
    const further = Array.from({ length: reach - 1 }, (_, i) => back(i + 2));
    const replies = (
      await redis.runMany(further.map((b) => nsListSnapshotCall(keys, { bucket: b, hostname, ns })))
    ).map(parseNsListSnapshot);
    const found = replies.findIndex((r) => r.length > 0);
    if (found < 0) return undefined;
    from = further[found]!;
    source = replies[found]!;
  }
  if (source.length === 0) return undefined;
  const listed = await copyNsList(redis, keys, { bucket, hostname, ns, snapshot: source });
  if (listed > 0)
    deps.log.info("namespace list copied into a bucket that had none", { ns, hostname, bucket, from, listed });
  return from;
}
