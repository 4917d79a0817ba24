import type { PinboardClaim } from "../auth/claims.ts";
import { isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest } from "../errors/pinboard-error.ts";
import { prefixPattern } from "../redis/glob.ts";
import { envOf, type WorkerRecord } from "../registry/record.ts";
import { visibleWorkers } from "./fleet-view.ts";
import { addAlarms, decodeCursor, encodeCursor, MAX_OVERVIEW_LIMIT, type PageCursor } from "./overview-paging.ts";
import { type AcceptRow, walkRows } from "./overview-walk.ts";
import { placementScopeError, publicWorkerOf } from "./scope.ts";

/** What this module uses of the app's dependencies. */
export type OverviewDeps = Pick<AppDeps, "config" | "redis" | "keys" | "durable">;

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
export async function overview(deps: OverviewDeps, claim: PinboardClaim, filters: OverviewFilters) {
  const aware = deps.config.hostnameAware;
  const { now, workers } = await visibleWorkers(deps, claim);
  const live = new Map(workers.map((w) => [w.record.sessionId, w.record]));

  const groups = new NamespaceGroups(aware);
  for (const { record, namespaces } of workers) {
    for (const ns of namespaces) {
      if (filters.ns === undefined || filters.ns === ns)
        groups.of(record.hostname, envOf(record, ns), ns).sessionIds.push(record.sessionId);
    }
  }

  const scope: RowScope = { claim, filters, live, now, aware, groups };
  const accept: AcceptRow = (env, ns, id, raw) => acceptRow(scope, env, ns, id, raw);
  const walk = {
    ...(filters.ns !== undefined ? { ns: filters.ns } : {}),
    ...(filters.cursor ? { from: filters.cursor } : {}),
    // The prefix is matched in Redis (HSCAN MATCH): only matching rows reach acceptRow.
    ...(filters.prefix !== undefined ? { match: prefixPattern(filters.prefix) } : {}),
    limit: filters.limit ?? Infinity,
  };
  const next = await walkRows(deps, walk, accept);
  if (filters.limit !== undefined) await addAlarms(deps, groups.list());
  const bindings: Bindings = aware ? await visibleBindings(deps, claim) : { hostnames: {}, envs: {} };
  return {
    workers: workers.map((w) => publicWorkerOf(w.record, w.namespaces, aware)),
    bindings,
    namespaces: sortedGroups(groups.list()),
    ...(next ? { cursor: encodeCursor(next) } : {}),
  };
}

/** The groups of the overview by (hostname, env, namespace), made on first use. */
class NamespaceGroups {
  private readonly byKey = new Map<string, NamespaceGroup>();

  constructor(private readonly aware: boolean) {}

  of(hostname: string, env: string, ns: string): NamespaceGroup {
    const key = `${hostname}\n${env}\n${ns}`;
    let g = this.byKey.get(key);
    if (!g) {
      const aware = this.aware;
      g = { hostname: aware ? hostname : null, env: aware ? env : null, namespace: ns, sessionIds: [], entries: [] };
      this.byKey.set(key, g);
    }
    return g;
  }

  list(): NamespaceGroup[] {
    return [...this.byKey.values()];
  }
}

interface RowScope {
  claim: PinboardClaim;
  filters: OverviewFilters;
  /** The visible live workers by sessionId. */
  live: ReadonlyMap<string, WorkerRecord>;
  now: number;
  aware: boolean;
  groups: NamespaceGroups;
}

/**
 * Takes a placement row into its group unless the filters drop it, its owner is not a visible
 * live worker, it is not placed yet (no epoch) or expired, or the claim does not cover it. The
 * walk has already applied the id prefix.
 */
function acceptRow(scope: RowScope, env: string, ns: string, id: string, raw: string): boolean {
  const { filters } = scope;
  const [sessionId = "", epoch = "", expiry = "", hostname = "", ...tagParts] = raw.split("\n");
  const tag = tagParts.join("\n");
  const owner = scope.live.get(sessionId);
  if (!owner || epoch === "" || (expiry !== "" && Number(expiry) <= scope.now)) return false;
  if (filters.tag !== undefined && tag !== filters.tag) return false;
  const host = hostname || owner.hostname;
  if (placementScopeError(scope.claim, { ns, hostname: host, env }, scope.aware)) return false;
  // A paged answer (an extension) names the placement epoch too.
  const paged = filters.limit !== undefined ? { epoch } : {};
  scope.groups.of(host, env, ns).entries.push({
    id,
    sessionId,
    ...paged,
    ...(expiry ? { expiry: Number(expiry) } : {}),
    ...(tag ? { tag } : {}),
  });
  return true;
}

type TakeoverPolicy = "wind_down" | "deny";

interface Bindings {
  /** "hostname/ns" → env. */
  hostnames: Record<string, string>;
  /** env → its takeover policy. */
  envs: Record<string, TakeoverPolicy>;
}

/** The hostname bindings the claim covers (hostname/ns → env), and the env bindings of their envs. */
async function visibleBindings(deps: OverviewDeps, claim: PinboardClaim): Promise<Bindings> {
  const { keys, redis } = deps;
  const bindings: Bindings = { hostnames: {}, envs: {} };
  const [hostnames, envs] = await Promise.all([redis.hgetall(keys.hostnameBindings), redis.hgetall(keys.envBindings)]);
  const envsSeen = new Set<string>();
  for (const [key, value] of Object.entries(hostnames)) {
    const env = value.split("\n")[0] ?? "";
    const slash = key.indexOf("/");
    if (placementScopeError(claim, { ns: key.slice(slash), hostname: key.slice(0, slash), env }, true)) continue;
    bindings.hostnames[key] = env;
    envsSeen.add(env);
  }
  // The register script writes the policy from the body's `takeover`, one of the two.
  for (const env of envsSeen) if (envs[env]) bindings.envs[env] = envs[env]!.split("\n")[0] as TakeoverPolicy;
  return bindings;
}

/** Groups by hostname, namespace and env; entries by id; sessions sorted. */
function sortedGroups(groups: NamespaceGroup[]): NamespaceGroup[] {
  return groups
    .map((g) => ({
      ...g,
      entries: g.entries.sort((a, b) => a.id.localeCompare(b.id)),
      sessionIds: g.sessionIds.sort(),
    }))
    .sort((a, b) => `${a.hostname}\n${a.namespace}\n${a.env}`.localeCompare(`${b.hostname}\n${b.namespace}\n${b.env}`));
}
