import { checkBackend, checkEnv, checkHostname, checkNamespace, type PinboardClaim } from "../auth/claims.ts";
import { envOf, type WorkerRecord } from "./record.ts";

type ScopedFields = Pick<WorkerRecord, "namespaces" | "hostname" | "env" | "envs"> & { advertiseUrl: string };

/**
 * The first way a registration falls outside a credential's pinboard claim, as the protocol's 403
 * string (namespace, backend host, port, hostname, env), or null when the claim covers it all.
 * Register judges the body with it; heartbeat and the other worker routes judge the stored record.
 */
export function scopeViolation(claim: PinboardClaim, fields: ScopedFields, hostnameAware: boolean): string | null {
  for (const ns of fields.namespaces) {
    const denied = checkNamespace(claim, ns);
    if (denied) return denied;
  }
  const backend = checkBackend(claim, new URL(fields.advertiseUrl));
  if (backend) return backend;
  if (!hostnameAware) return null;
  const hostname = checkHostname(claim, fields.hostname);
  if (hostname) return hostname;
  for (const ns of fields.namespaces) {
    const env = checkEnv(claim, envOf(fields, ns));
    if (env) return env;
  }
  return null;
}
