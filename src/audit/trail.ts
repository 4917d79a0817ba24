import type { AppDeps } from "../deps/app-deps.ts";
import { redisErrorText } from "../redis/redis-errors.ts";
import type { AuditRecord } from "./entry.ts";
import { appendAudit, recordEjection } from "./lua/index.ts";

/** What recording uses of the app's dependencies. */
export type AuditDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/**
 * Records an action or an event in the audit trail, after the thing it records is done.
 * Recording never fails it: an append that fails (Redis unreachable, the key of another type) is
 * logged and the caller's answer stays what it was.
 */
export async function recordAudit(deps: AuditDeps, record: AuditRecord): Promise<void> {
  try {
    await appendAudit(deps.redis, deps.keys, deps.config.auditMaxEntries, record);
  } catch (err) {
    deps.log.warn("audit append failed", { type: record.type, error: redisErrorText(err) });
  }
}

/** Records a worker's outlier ejection (worker.ejected), like recordAudit never failing its caller. */
export async function recordWorkerEjection(deps: AuditDeps, sessionId: string, ejectedUntil: number): Promise<void> {
  try {
    await recordEjection(deps.redis, deps.keys, { cap: deps.config.auditMaxEntries, sessionId, ejectedUntil });
  } catch (err) {
    deps.log.warn("audit append failed", { type: "worker.ejected", error: redisErrorText(err) });
  }
}
