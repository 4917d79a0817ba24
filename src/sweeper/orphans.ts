import type { AppDeps } from "../deps.ts";
import { scanOrphans } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type OrphansDeps = Pick<AppDeps, "config" | "redis" | "keys">;

/** HSCAN pages one pass may read; each page's COUNT is the sweep batch. */
const PAGES_PER_PASS = 4;

/**
 * Finds placements whose owner died: pages through the placements hashes of one bucket after
 * another (resuming where the last pass stopped) and lists each orphaned row on the overwritten
 * hash, where the durability sweep picks it up. Bounded to a few pages per pass.
 */
export async function sweepOrphans(deps: OrphansDeps): Promise<number> {
  const { keys, redis, config } = deps;
  const saved = (await redis.get(keys.orphanCursor)) ?? "";
  let [bucket, space, cursor] = saved === "" ? [0, "", "0"] : decode(saved);
  let listed = 0;
  for (let page = 0; page < PAGES_PER_PASS; page++) {
    const spaces = (await redis.smembers(keys.spaces(bucket))).sort();
    const current = spaces.find((s) => s >= space);
    if (current === undefined) {
      [bucket, space, cursor] = [(bucket + 1) % config.shards, "", "0"];
      continue;
    }
    if (current !== space) [space, cursor] = [current, "0"];
    const scanned = await scanOrphans(redis, keys, { bucket, space, cursor, count: config.sweepBatch });
    listed += scanned.listed;
    if (scanned.next === "0") {
      const later = spaces.find((s) => s > space);
      [bucket, space, cursor] = later === undefined ? [(bucket + 1) % config.shards, "", "0"] : [bucket, later, "0"];
    } else {
      cursor = scanned.next;
    }
  }
  await redis.set(keys.orphanCursor, `${bucket}\n${space}\n${cursor}`);
  return listed;
}

function decode(saved: string): [number, string, string] {
  const parts = saved.split("\n");
  const cursor = parts.pop() ?? "0";
  const bucket = Number(parts.shift() ?? 0);
  return [Number.isInteger(bucket) ? bucket : 0, parts.join("\n"), cursor];
}
