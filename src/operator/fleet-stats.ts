import type { PinboardClaim } from "../auth/claims.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { type VisibleWorker, visibleWorkers } from "./fleet-view.ts";
import { statsInstances, workerStats } from "./worker-stats.ts";

/** What this module uses of the app's dependencies. */
export type StatsDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "fetch" | "runtime" | "secrets">;

export const STATS_CONCURRENCY = 8;

type StatsEntry = { sessionId: string; clientId: string; hostname: string | null } & (
  | { stats: Record<string, unknown> }
  | { error: "unreachable" }
);

/**
 * GET /registry/stats: each visible live worker's GET {advertiseUrl}/_pinned/stats, attested,
 * 3 s timeout, 8 at a time. `namespaces` keeps only keys the operator may see among the
 * worker's registered namespaces; `instances` keeps only items of those. A non-2xx, timeout or
 * non-object answer reports {"error":"unreachable"}.
 */
export async function fleetStats(deps: StatsDeps, claim: PinboardClaim): Promise<{ workers: StatsEntry[] }> {
  const { workers } = await visibleWorkers(deps, claim);
  const results: StatsEntry[] = new Array(workers.length);
  let next = 0;
  const lane = async () => {
    while (next < workers.length) {
      const i = next++;
      results[i] = await statsOf(deps, workers[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(STATS_CONCURRENCY, workers.length) }, lane));
  return { workers: results };
}

async function statsOf(deps: StatsDeps, { record, namespaces }: VisibleWorker): Promise<StatsEntry> {
  const head = {
    sessionId: record.sessionId,
    clientId: record.clientId,
    hostname: deps.config.hostnameAware ? record.hostname : null,
  };
  const stats = await workerStats(deps, record);
  if (stats === null) return { ...head, error: "unreachable" };
  return { ...head, stats: filterStats(stats, new Set(namespaces)) };
}

function filterStats(stats: Record<string, unknown>, visible: Set<string>): Record<string, unknown> {
  const out = { ...stats };
  if (stats.namespaces && typeof stats.namespaces === "object" && !Array.isArray(stats.namespaces)) {
    out.namespaces = Object.fromEntries(Object.entries(stats.namespaces).filter(([ns]) => visible.has(ns)));
  }
  if (Array.isArray(stats.instances))
    out.instances = statsInstances(stats).filter((item) => visible.has(String(item.ns)));
  return out;
}
