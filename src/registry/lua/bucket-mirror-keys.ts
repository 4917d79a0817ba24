import type { Keys } from "../../redis/keys.ts";

/** The keys of a session's mirror in one bucket, by the names the bucket scripts' headers give them. */
export interface BucketMirrorKeys {
  workers: string;
  clients: string;
  workerExpiries: string;
  /** The namespace lists of the record's hostname and namespaces. */
  nsLists: string[];
}

/** The keys a bucket script writes a session's mirror to (register, heartbeat and unmirror share them). */
export function bucketMirrorKeys(
  keys: Keys,
  bucket: number,
  record: { hostname: string; namespaces: readonly string[] },
): BucketMirrorKeys {
  return {
    workers: keys.workers(bucket),
    clients: keys.clients(bucket),
    workerExpiries: keys.workerExpiries(bucket),
    nsLists: keys.nsListKeysFor(bucket, record.hostname, record.namespaces),
  };
}
