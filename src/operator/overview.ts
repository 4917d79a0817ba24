import type { PinboardClaim } from "../auth/claims.ts";
import { isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps.ts";
import { badRequest } from "../errors.ts";
import { envOf } from "../registry/record.ts";
import { visibleWorkers } from "./fleet-view.ts";
import { addAlarms, decodeCursor, encodeCursor, MAX_OVERVIEW_LIMIT, type PageCursor } from "./overview-paging.ts";
import { walkRows } from "./overview-walk.ts";
import { placementScopeError, publicWorker } from "./scope.ts";

export interface OverviewFilters {
  ns?: string;
  prefix?: string;
  tag?: string;
  /** Paging (an extension of the protocol): at most this many entries in all. */
  limit?: number;
  /** Where a previous answer stopped (its `cursor`: the limit, or the walk's budget, was reached). */
  cursor?: PageCursor;
}

export interface OverviewEntry {
  id: string;
  sessionId: string;
  epoch?: string;
  alarm?: number;
  expiry?: number;
  tag?: string;
}

export interface NamespaceGroup {
  hostname: string | null;
  env: string | null;
  namespace: string;
  sessionIds: string[];
  entries: OverviewEntry[];
}

/**
 * Validates the query: ns must be a namespace (400 invalid namespace), tag not blank (400 empty
 * tag), limit an integer from 1 to 1000 (400 invalid limit), cursor one this route gave out
 * (400 invalid cursor).
 */
export function parseOverviewFilters(query: Record<string, string | undefined>): OverviewFilters {
  const filters: OverviewFilters = {};
  if (query.ns !== undefined) {
    if (!isNamespace(query.ns)) throw badRequest("invalid namespace");
    filters.ns = query.ns;
  }
  if (query.prefix !== undefined && query.prefix !== "") filters.prefix = query.prefix;
  if (query.tag !== undefined) {
    if (query.tag.trim() === "") throw badRequest("empty tag");
    filters.tag = query.tag;
  }
  if (query.limit !== undefined) {
    if (!/^\d{1,4}$/.test(query.limit) || Number(query.limit) < 1 || Number(query.limit) > MAX_OVERVIEW_LIMIT)
      throw badRequest("invalid limit");
    filters.limit = Number(query.limit);
  }
  if (query.cursor !== undefined) {
    const cursor = decodeCursor(query.cursor);
    if (cursor === null) throw badRequest("invalid cursor");
    filters.cursor = cursor;
  }
  return filters;
}

/**
 * GET /registry/overview: the visible workers, the hostname-aware bindings and the live
 * placements grouped by (hostname, env, namespace). Filters are ANDed: ns drops other
 * namespaces, prefix and tag filter entries (untagged rows never match a tag). The walk over the
 * rows is bounded per request (overview-walk.ts): an answer that stopped before the end, at
 * `limit` or at the budget, names a `cursor` to go on from, paged or not.
 */
export async function overview(deps: AppDeps, claim: PinboardClaim, filters: OverviewFilters) {
  const { keys, config, redis } = deps;
  const aware = config.hostnameAware;
  const { now, workers } = await visibleWorkers(deps, claim);
  const live = new Map(workers.map((w) => [w.record.sessionId, w.record]));

  const groups = new Map<string, NamespaceGroup>();
  const group = (hostname: string, env: string, ns: string): NamespaceGroup => {
    const key = `${hostname}\n${env}\n${ns}`;
    let g = groups.get(key);
    if (!g) {
      g = { hostname: aware ? hostname : null, env: aware ? env : null, namespace: ns, sessionIds: [], entries: [] };
      groups.set(key, g);
    }
    return g;
  };
  for (const { record, namespaces } of workers) {
    for (const ns of namespaces) {
      if (filters.ns === undefined || filters.ns === ns)
        group(record.hostname, envOf(record, ns), ns).sessionIds.push(record.sessionId);
    }
  }

  const page = { left: filters.limit ?? Infinity, next: undefined as PageCursor | undefined };
  const accept = (env: string, ns: string, id: string, raw: string): boolean => {
    if (filters.prefix !== undefined && !id.startsWith(filters.prefix)) return false;
    const [sessionId = "", epoch = "", expiry = "", hostname = "", ...tagParts] = raw.split("\n");
    const tag = tagParts.join("\n");
    const owner = live.get(sessionId);
    if (!owner || epoch === "" || (expiry !== "" && Number(expiry) <= now)) return false;
    if (filters.tag !== undefined && tag !== filters.tag) return false;
    const host = hostname || owner.hostname;
    if (placementScopeError(claim, { ns, hostname: host, env }, aware)) return false;
    // A paged answer (an extension) names the placement epoch too.
    const paged = filters.limit !== undefined ? { epoch } : {};
    group(host, env, ns).entries.push({
      id,
      sessionId,
      ...paged,
      ...(expiry ? { expiry: Number(expiry) } : {}),
      ...(tag ? { tag } : {}),
    });
    return true;
  };
  const walk = {
    ...(filters.ns !== undefined ? { ns: filters.ns } : {}),
    ...(filters.cursor ? { from: filters.cursor } : {}),
    limit: page.left,
  };
  page.next = await walkRows(deps, walk, accept);
  if (filters.limit !== undefined) await addAlarms(deps, [...groups.values()]);
  const bindings = { hostnames: {} as Record<string, string>, envs: {} as Record<string, string> };
  if (aware) {
    const [hostnames, envs] = await Promise.all([
      redis.hgetall(keys.hostnameBindings),
      redis.hgetall(keys.envBindings),
    ]);
    const envsSeen = new Set<string>();
    for (const [key, value] of Object.entries(hostnames)) {
      const env = value.split("\n")[0] ?? "";
      const slash = key.indexOf("/");
      if (placementScopeError(claim, { ns: key.slice(slash), hostname: key.slice(0, slash), env }, true)) continue;
      bindings.hostnames[key] = env;
      envsSeen.add(env);
    }
    for (const env of envsSeen) if (envs[env]) bindings.envs[env] = envs[env]!.split("\n")[0] ?? "";
  }

  const namespaces = [...groups.values()]
    .map((g) => ({
      ...g,
      entries: g.entries.sort((a, b) => a.id.localeCompare(b.id)),
      sessionIds: g.sessionIds.sort(),
    }))
    .sort((a, b) => `${a.hostname}\n${a.namespace}\n${a.env}`.localeCompare(`${b.hostname}\n${b.namespace}\n${b.env}`));
  return {
    workers: workers.map((w) => publicWorker(w.record, w.namespaces, aware)),
    bindings,
    namespaces,
    ...(page.next ? { cursor: encodeCursor(page.next) } : {}),
  };
}
