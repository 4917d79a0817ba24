import type { Keys } from "../../redis/keys.ts";

/**
 * The fleet-wide ({global}) keys of the session scripts, by the names their headers give them:
 * each script's typed call takes the ones it names, in its own order. The per-session control
 * queue and the per-client drain key are added by the caller that knows the ids.
 */
export interface SessionKeys {
  sessions: string;
  sessionExpiries: string;
  clients: string;
  generation: string;
  hostnameBindings: string;
  envBindings: string;
  bindingQuarantine: string;
  members: string;
  sessionOwners: string;
  sessionOwnerChecks: string;
  audit: string;
  auditEjections: string;
}

export function sessionKeys(keys: Keys): SessionKeys {
  return {
    sessions: keys.sessions,
    sessionExpiries: keys.sessionExpiries,
    clients: keys.clientOwners,
    generation: keys.generation,
    hostnameBindings: keys.hostnameBindings,
    envBindings: keys.envBindings,
    bindingQuarantine: keys.bindingQuarantine,
    members: keys.members,
    sessionOwners: keys.sessionOwners,
    sessionOwnerChecks: keys.sessionOwnerChecks,
    audit: keys.audit,
    auditEjections: keys.auditEjections,
  };
}
