import type { PinboardClaim } from "../auth/claims.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { withSpentHeadroom } from "../registry/headroom.ts";
import { parseRecord, type WorkerRecord } from "../registry/record.ts";
import { visibleNamespaces } from "./scope.ts";

/** What this module uses of the app's dependencies. */
export type FleetViewDeps = Pick<AppDeps, "config" | "redis" | "keys">;

export interface VisibleWorker {
  record: WorkerRecord;
  namespaces: string[];
}

/**
 * Every live worker record, with Redis' clock, for the read routes and metrics. Headroom is the
 * record's less the new placements made since its last heartbeat (registry/headroom.ts).
 */
export async function liveRecords(deps: FleetViewDeps): Promise<{ now: number; records: WorkerRecord[] }> {
  const [now, all] = await Promise.all([deps.redis.timeMs(), deps.redis.hgetall(deps.keys.sessions)]);
  const records = Object.values(all)
    .map(parseRecord)
    .filter((r) => r.expiry > now);
  return { now, records: await withSpentHeadroom(deps, records) };
}

/** The live workers a credential may see, sorted by hostname then session. */
export async function visibleWorkers(
  deps: FleetViewDeps,
  claim: PinboardClaim,
): Promise<{ now: number; workers: VisibleWorker[] }> {
  const { now, records } = await liveRecords(deps);
  return { now, workers: visibleAmong(records, claim, deps.config.hostnameAware) };
}

/** The records a credential may see, with their visible namespaces, sorted by hostname then session. */
export function visibleAmong(records: WorkerRecord[], claim: PinboardClaim, hostnameAware: boolean): VisibleWorker[] {
  return records
    .map((record) => ({ record, namespaces: visibleNamespaces(claim, record, hostnameAware) }))
    .filter((w) => w.namespaces.length > 0)
    .sort((a, b) =>
      a.record.hostname === b.record.hostname
        ? a.record.sessionId.localeCompare(b.record.sessionId)
        : a.record.hostname.localeCompare(b.record.hostname),
    );
}

/**
 * Workers whose outlier ejection is still running: sessionId → ejected-until (Redis-clock ms).
 * Every ejection is mirrored into every bucket (mark-ejected), so bucket 0's hash holds them all.
 */
export async function runningEjections(deps: FleetViewDeps, now: number): Promise<Map<string, number>> {
  const all = await deps.redis.hgetall(deps.keys.ejected(0));
  return new Map(
    Object.entries(all)
      .map(([sessionId, until]) => [sessionId, Number(until)] as const)
      .filter(([, until]) => until > now),
  );
}
