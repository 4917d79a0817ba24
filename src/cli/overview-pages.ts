import { OPERATOR_ROUTES } from "../operator/route-table.ts";
import type { OperatorClient } from "./client.ts";

/**
 * `pinboard overview` reads the whole overview: GET /registry/overview bounds the Redis work of
 * one request and answers a `cursor` when it stopped before the end (docs/operations.md), so the
 * CLI follows the cursors and merges the pages into the one protocol answer it prints.
 */

interface Group {
  hostname: string | null;
  env: string | null;
  namespace: string;
  sessionIds: string[];
  entries: unknown[];
}

interface Page {
  workers?: unknown;
  bindings?: unknown;
  namespaces?: Group[];
  cursor?: string;
}

/**
 * Follows the overview's cursors to the end; answers the first page's workers and bindings with
 * every page's namespaces merged.
 */
export async function readWholeOverview(
  client: OperatorClient,
  query: Record<string, string | undefined>,
): Promise<unknown> {
  let page = (await client.get(OPERATOR_ROUTES.overview.path, query)) as Page;
  const first = page;
  const groups = new Map<string, Group>();
  for (;;) {
    for (const group of Array.isArray(page.namespaces) ? page.namespaces : []) merge(groups, group);
    if (typeof page.cursor !== "string" || page.cursor === "") break;
    page = (await client.get(OPERATOR_ROUTES.overview.path, { ...query, cursor: page.cursor })) as Page;
  }
  if (!Array.isArray(first.namespaces)) return first; // not an overview: the caller's schema check says so
  const { cursor: _cursor, ...rest } = first;
  return { ...rest, namespaces: [...groups.values()] };
}

function merge(groups: Map<string, Group>, group: Group): void {
  const key = `${group.hostname}\n${group.env}\n${group.namespace}`;
  const held = groups.get(key);
  if (!held) {
    groups.set(key, { ...group, sessionIds: [...group.sessionIds], entries: [...group.entries] });
    return;
  }
  held.sessionIds = [...new Set([...held.sessionIds, ...group.sessionIds])];
  for (const entry of group.entries) held.entries.push(entry);
}
