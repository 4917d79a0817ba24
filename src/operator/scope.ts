import { checkEnv, checkHostname, checkNamespace, type PinboardClaim } from "../auth/claims.ts";
import { envOf, type WorkerRecord } from "../registry/record.ts";
import type { PublicWorker } from "./replies.ts";

/**
 * How the operator routes judge a credential: by its namespace, hostname and env claims, never
 * by account. A record is visible when its hostname is allowed and at least one of its
 * namespaces (with that namespace's env) is.
 */
export function visibleNamespaces(claim: PinboardClaim, record: WorkerRecord, hostnameAware: boolean): string[] {
  if (hostnameAware && checkHostname(claim, record.hostname)) return [];
  return record.namespaces.filter(
    (ns) => checkNamespace(claim, ns) === null && (!hostnameAware || checkEnv(claim, envOf(record, ns)) === null),
  );
}

/** The protocol's 403 string for a (namespace, hostname, env) outside the claim, or null. */
export function placementScopeError(
  claim: PinboardClaim,
  target: { ns: string; hostname: string; env: string },
  hostnameAware: boolean,
): string | null {
  const ns = checkNamespace(claim, target.ns);
  if (ns) return ns;
  if (!hostnameAware) return null;
  if (checkHostname(claim, target.hostname)) return "forbidden";
  return checkEnv(claim, target.env);
}

/**
 * A wind-down request judged on what it names, before any row is read: its namespace, and in
 * hostname-aware mode its env. The answer never depends on which rows exist.
 */
export function requestScopeError(
  claim: PinboardClaim,
  ns: string,
  env: string,
  hostnameAware: boolean,
): string | null {
  return checkNamespace(claim, ns) ?? (hostnameAware ? checkEnv(claim, env) : null);
}

/**
 * A placement row of (env, ns) judged on its owner record's hostname and envs[ns], or, when the
 * record is gone, on the row's own hostname and the env whose hash holds it. A missing row (null)
 * is judged like an ownerless row without a hostname: a claim that restricts hostnames cannot be
 * shown to cover it, so a missing row and a row of another hostname get the same answer.
 */
export function rowScopeError(
  claim: PinboardClaim,
  ns: string,
  env: string,
  row: { hostname: string } | null,
  owner: WorkerRecord | null,
  hostnameAware: boolean,
): string | null {
  const target = owner
    ? { ns, hostname: owner.hostname, env: envOf(owner, ns) }
    : { ns, hostname: row?.hostname ?? "", env };
  return placementScopeError(claim, target, hostnameAware);
}

/** The public view of a record: secret and account never leave, namespaces filtered. */
export function publicWorkerOf(
  record: WorkerRecord,
  namespaces: string[],
  hostnameAware: boolean,
  ejectedUntil?: number,
): PublicWorker {
  return {
    sessionId: record.sessionId,
    clientId: record.clientId,
    advertiseUrl: record.advertiseUrl,
    namespaces,
    hostname: hostnameAware ? record.hostname : null,
    envs: hostnameAware ? Object.fromEntries(namespaces.map((ns) => [ns, envOf(record, ns)])) : {},
    takeover: hostnameAware ? record.takeover : null,
    headroom: record.headroom,
    draining: record.draining,
    ...(record.degradedSince !== undefined ? { degradedSince: record.degradedSince } : {}),
    // An extension of the protocol's shape, on /registry/workers only: a running outlier ejection.
    ...(ejectedUntil !== undefined ? { ejectedUntil } : {}),
    expiry: record.expiry,
  };
}
