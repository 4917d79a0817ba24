import { SINGLE_ENV } from "../redis/keys.ts";
import type { AuditTarget } from "./entry.ts";

/** The fields of a worker record an audit target is built from (src/registry/record.ts). */
export interface WorkerTargetSource {
  sessionId: string;
  clientId: string;
  namespaces: readonly string[];
  hostname: string;
  env: string;
  envs: Record<string, string>;
}

/**
 * The target of a worker's event or of an action on a worker: its session, client and
 * namespaces, and in hostname-aware mode its hostname and the env of each namespace, so that the
 * trail is judged on them like /registry/workers judges the record. The same as the Lua
 * `audit_worker_target` (src/redis/lua/includes/audit.lua) builds for the events a script records.
 */
export function workerTarget(record: WorkerTargetSource): AuditTarget {
  const envs: Record<string, string> = {};
  for (const ns of record.namespaces) {
    const env = record.envs[ns] ?? record.env;
    if (env && env !== SINGLE_ENV) envs[ns] = env;
  }
  return {
    sessionId: record.sessionId,
    clientId: record.clientId,
    namespaces: [...record.namespaces],
    ...(record.hostname ? { hostname: record.hostname } : {}),
    ...(Object.keys(envs).length > 0 ? { envs } : {}),
  };
}
