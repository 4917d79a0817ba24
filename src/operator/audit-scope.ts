import type { AuditEntry, AuditTarget } from "../audit/entry.ts";
import { checkEnv, checkHostname, checkNamespace, isUnrestricted, type PinboardClaim } from "../auth/claims.ts";

/** The namespaces an entry concerns: a wind-down's one, a worker's list, none for fleet-wide ones. */
function namespacesOf(target: AuditTarget): string[] {
  return target.namespace !== undefined ? [target.namespace] : (target.namespaces ?? []);
}

/**
 * An audit entry as a credential may see it, judged like /registry/workers judges a record: on
 * the namespaces of its target, and in hostname-aware mode on the target's hostname and each
 * namespace's env too. A worker's entry is visible when one of its namespaces is, its namespaces
 * (and envs) cut down to those. An entry without a hostname in hostname-aware mode (a wind-down of
 * a whole namespace, which may span hostnames) is visible only to a claim without a hostname
 * restriction. A fleet-wide entry (sweep) is visible only to a claim with "*" in namespaces (in
 * hostname-aware mode, and no hostname or env restriction). A worker's namespaces the entry
 * does not list (namespacesOmitted) are judged by none: only a claim with "*" in namespaces,
 * which sees them all, is told how many there are. Null when it is not visible.
 */
export function visibleEntry(claim: PinboardClaim, entry: AuditEntry, hostnameAware: boolean): AuditEntry | null {
  const { target } = entry;
  const namespaces = namespacesOf(target);
  if (namespaces.length === 0) {
    const open = hostnameAware ? isUnrestricted(claim) : claim.namespaces.includes("*");
    return open ? entry : null;
  }
  if (hostnameAware && checkHostname(claim, target.hostname ?? "") !== null) return null;
  const visible = namespaces.filter(
    (ns) =>
      checkNamespace(claim, ns) === null &&
      (!hostnameAware || checkEnv(claim, target.env ?? target.envs?.[ns] ?? "") === null),
  );
  if (visible.length === 0) return null;
  const omitted = target.namespacesOmitted !== undefined && !claim.namespaces.includes("*");
  if (target.namespaces === undefined || (visible.length === namespaces.length && !omitted)) return entry;
  return { ...entry, target: cutDown(target, visible) };
}

/** A worker's target with only the visible namespaces, and their envs; not how many were omitted. */
function cutDown(target: AuditTarget, visible: string[]): AuditTarget {
  const { envs, namespacesOmitted: _, ...rest } = target;
  if (!envs) return { ...rest, namespaces: visible };
  const kept = visible.filter((ns) => Object.hasOwn(envs, ns)).map((ns) => [ns, envs[ns]!]);
  return { ...rest, namespaces: visible, envs: Object.fromEntries(kept) };
}
