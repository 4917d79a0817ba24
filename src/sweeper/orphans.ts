import type { AppDeps } from "../deps/app-deps.ts";
import { scanOrphans } from "./lua/index.ts";
import { budgetSpent, type SubrequestBudget } from "./subrequest-budget.ts";

/** What this module uses of the app's dependencies, and the pass's budget. */
export type OrphansDeps = Pick<AppDeps, "config" | "redis" | "keys"> & { budget: SubrequestBudget };

/** HSCAN pages one pass may read; each page's COUNT is the sweep batch. */
const PAGES_PER_PASS = 4;
/** Requests of a page: the bucket's spaces and the scan. */
const PAGE_COST = 2;

/**
 * Finds placements whose owner died: pages through the placements hashes of one bucket after
 * another (resuming where the last pass stopped) and lists each orphaned row on the overwritten
 * hash, where the durability sweep picks it up. Bounded to a few pages per pass, and to what
 * the budget has while it leaves `leave` (a fraction of it) to the stages after this one; the
 * cursor is saved at the end, so a pass stopped short reads the same pages again.
 */
export async function sweepOrphans(deps: OrphansDeps, leave: number): Promise<number> {
  const { budget } = deps;
  // The cursor read and save, and one page.
  if (!budget.canSpend(2 + PAGE_COST, leave)) return 0;
  try {
    return await scanPages(deps, leave);
  } catch (err) {
    if (!budgetSpent(err)) throw err;
    return 0;
  }
}

async function scanPages(deps: OrphansDeps, leave: number): Promise<number> {
  const { keys, redis, config, budget } = deps;
  const saved = (await redis.get(keys.orphanCursor)) ?? "";
  let [bucket, space, cursor] = saved === "" ? [0, "", "0"] : decode(saved);
  let listed = 0;
  // Each page leaves one request for the save.
  for (let page = 0; page < PAGES_PER_PASS && budget.canSpend(PAGE_COST + 1, leave); page++) {
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
