import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { scanOrphansScriptCall } from "./scripts.generated.ts";

export interface ScanOrphansInput {
  bucket: number;
  /** A member of the bucket's spaces set, `env \n ns`: the placements hash scanned. */
  space: string;
  cursor: string;
  /** The HSCAN COUNT hint. */
  count: number;
}

export interface ScanOrphansResult {
  /** "0" when the hash is done. */
  next: string;
  listed: number;
}

/** One HSCAN page of a placements hash, listing rows of dead owners (lua/scan-orphans-3.lua). */
export async function scanOrphans(redis: RedisPort, keys: Keys, input: ScanOrphansInput): Promise<ScanOrphansResult> {
  const { bucket, space, cursor, count } = input;
  const [env = "", ns = ""] = space.split("\n");
  const call = scanOrphansScriptCall(
    {
      placements: keys.placements(bucket, env, ns),
      workers: keys.workers(bucket),
      overwritten: keys.overwritten(bucket),
    },
    { cursor, count, space },
  );
  const [next, listed] = (await runCall(redis, call)) as [string, number];
  return { next: String(next), listed: Number(listed) };
}
