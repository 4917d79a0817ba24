import type { AppDeps } from "../../deps.ts";
import { base64url, base64urlDecode } from "../../contract/base64url.ts";
import { instanceMember } from "../../contract/durable-index.ts";
import type { NamespaceGroup, OverviewFilters } from "./overview.ts";

/**
 * Paging of GET /registry/overview (an extension of the protocol, for the console): `limit`
 * entries at most, and an opaque cursor that says where the next page starts.
 */

/** Where a paged overview goes on: a bucket, a placement space in it, an HSCAN cursor, and rows of that batch already seen. */
export interface PageCursor {
  bucket: number;
  space: string;
  scan: string;
  skip: number;
}

export const MAX_OVERVIEW_LIMIT = 1000;
const SCAN_BATCH = 500;

export function encodeCursor(c: PageCursor): string {
  return base64url(new TextEncoder().encode(JSON.stringify([c.bucket, c.space, c.scan, c.skip])));
}

export function decodeCursor(text: string): PageCursor | null {
  const bytes = text.length <= 2048 ? base64urlDecode(text) : null;
  if (bytes === null || bytes.length === 0) return null;
  try {
    const value: unknown = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes));
    if (!Array.isArray(value) || value.length !== 4) return null;
    const [bucket, space, scan, skip] = value as unknown[];
    if (!Number.isSafeInteger(bucket) || (bucket as number) < 0 || typeof space !== "string" || typeof scan !== "string" || !/^\d{1,20}$/.test(scan)) return null;
    if (!Number.isSafeInteger(skip) || (skip as number) < 0) return null;
    return { bucket: bucket as number, space, scan, skip: skip as number };
  } catch {
    return null;
  }
}

/**
 * The rows of a paged overview: buckets in order, each bucket's placement spaces in sorted order,
 * each space by HSCAN, from `filters.cursor` on, until `limit` rows were accepted. Answers where
 * to go on, or undefined at the end. Like HSCAN, a walk sees every row that exists from its
 * first page to its last at least once; rows written meanwhile may be seen or not.
 */
export async function pagedRows(
  deps: AppDeps,
  filters: OverviewFilters,
  limit: number,
  accept: (env: string, ns: string, id: string, raw: string) => boolean,
): Promise<PageCursor | undefined> {
  const { keys, redis } = deps;
  const from = filters.cursor;
  let taken = 0;
  for (const bucket of keys.allBuckets()) {
    if (from && bucket < from.bucket) continue;
    const spaces = (await redis.smembers(keys.spaces(bucket)))
      .filter((space) => filters.ns === undefined || space.split("\n")[1] === filters.ns)
      .sort();
    for (const space of spaces) {
      const resuming = from !== undefined && bucket === from.bucket;
      if (resuming && space < from.space) continue;
      const [env = "", ns = ""] = space.split("\n");
      let scan = resuming && space === from.space ? from.scan : "0";
      let skip = resuming && space === from.space ? from.skip : 0;
      do {
        const [next, rows] = await redis.hscan(keys.placements(bucket, env, ns), scan, SCAN_BATCH);
        const batch = Object.entries(rows);
        for (let i = skip; i < batch.length; i++) {
          if (!accept(env, ns, batch[i]![0], batch[i]![1])) continue;
          if (++taken === limit) {
            const more = i + 1 < batch.length || next !== "0";
            return more ? (i + 1 < batch.length ? { bucket, space, scan, skip: i + 1 } : { bucket, space, scan: next, skip: 0 }) : nextSpace(bucket, space);
          }
        }
        scan = next;
        skip = 0;
      } while (scan !== "0");
    }
  }
  return undefined;
}

/**
 * A paged answer names each entry's durable alarm (due time in ms) when the worker library's
 * index lists one: one ZMSCORE for the page. The index is advisory (a superset of due alarms).
 */
export async function addAlarms(deps: AppDeps, groups: NamespaceGroup[]): Promise<void> {
  const entries = groups.flatMap((g) => g.entries.map((entry) => ({ entry, member: instanceMember(g.namespace, entry.id) })));
  const scores = await deps.durable.redis.zmscore(deps.durable.keys.alarms, entries.map((e) => e.member));
  entries.forEach(({ entry }, i) => {
    const at = scores[i];
    if (at !== null && at !== undefined) entry.alarm = at;
  });
}

/** The cursor that starts after `space` (its successors in sort order, then the next buckets). */
function nextSpace(bucket: number, space: string): PageCursor {
  return { bucket, space: `${space}\u0000`, scan: "0", skip: 0 };
}
