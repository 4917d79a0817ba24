import { base64url, base64urlDecode } from "../contract/base64url.ts";
import { instanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import type { NamespaceGroup } from "./overview.ts";

/** What this module uses of the app's dependencies. */
export type OverviewPagingDeps = Pick<AppDeps, "durable">;

/**
 * Paging of GET /registry/overview (an extension of the protocol, for the console): `limit`
 * entries at most, and an opaque cursor that says where the next page starts. The walk itself,
 * with its per-request budget, is overview-walk.ts.
 */

/**
 * Where a paged overview goes on: a bucket, a placement space in it, an HSCAN cursor, and rows of
 * that batch already seen.
 */
export interface PageCursor {
  bucket: number;
  space: string;
  scan: string;
  skip: number;
}

export const MAX_OVERVIEW_LIMIT = 1000;

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
    if (
      !Number.isSafeInteger(bucket) ||
      (bucket as number) < 0 ||
      typeof space !== "string" ||
      typeof scan !== "string" ||
      !/^\d{1,20}$/.test(scan)
    )
      return null;
    if (!Number.isSafeInteger(skip) || (skip as number) < 0) return null;
    return { bucket: bucket as number, space, scan, skip: skip as number };
  } catch {
    return null;
  }
}

/**
 * A paged answer names each entry's durable alarm (due time in ms) when the worker library's
 * index lists one: one ZMSCORE for the page. The index is advisory (a superset of due alarms).
 */
export async function addAlarms(deps: OverviewPagingDeps, groups: NamespaceGroup[]): Promise<void> {
  const entries = groups.flatMap((g) =>
    g.entries.map((entry) => ({ entry, member: instanceMember(g.namespace, entry.id) })),
  );
  const scores = await deps.durable.redis.zmscore(
    deps.durable.keys.alarms,
    entries.map((e) => e.member),
  );
  entries.forEach(({ entry }, i) => {
    const at = scores[i];
    if (at !== null && at !== undefined) entry.alarm = at;
  });
}
