import type { PinboardClaim } from "../../auth/claims.ts";
import type { AppDeps } from "../../deps.ts";
import { withSpentHeadroom } from "../headroom.ts";
import { parseRecord, type WorkerRecord } from "../record.ts";
import { visibleNamespaces } from "./scope.ts";

export interface VisibleWorker {
  record: WorkerRecord;
  namespaces: string[];
}

/**
 * Every live worker record, with Redis' clock, for the read routes and metrics. Headroom is the
 * record's less the new placements made since its last heartbeat (registry/headroom.ts).
 */
export async function liveRecords(deps: AppDeps): Promise<{ now: number; records: WorkerRecord[] }> {
  const [now, all] = await Promise.all([deps.redis.timeMs(), deps.redis.hgetall(deps.keys.sessions)]);
  const records = Object.values(all)
    .map(parseRecord)
    .filter((r) => r.expiry > now);
  return { now, records: await withSpentHeadroom(deps, records) };
}

/** The live workers a credential may see, sorted by hostname then session. */
export async function visibleWorkers(deps: AppDeps, claim: PinboardClaim): Promise<{ now: number; workers: VisibleWorker[] }> {
  const { now, records } = await liveRecords(deps);
  const workers = records
    .map((record) => ({ record, namespaces: visibleNamespaces(claim, record, deps.config.hostnameAware) }))
    .filter((w) => w.namespaces.length > 0)
    .sort((a, b) =>
      a.record.hostname === b.record.hostname
        ? a.record.sessionId.localeCompare(b.record.sessionId)
        : a.record.hostname.localeCompare(b.record.hostname),
    );
  return { now, workers };
}
