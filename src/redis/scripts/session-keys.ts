import type { Keys } from "../keys.ts";

/**
 * The fleet-wide ({global}) KEYS of the session scripts. Each script takes its own subset in its
 * own order (the order its Lua header names); the orders are all written here, side by side, and
 * each key is built by one name.
 */

/** The session whose control queue, and the client whose drain, a script's keys name. */
export interface SessionKeyIds {
  sessionId?: string;
  clientId?: string;
}

type SessionKeyName =
  | "sessions"
  | "sessionExpiries"
  | "clients"
  | "generation"
  | "hostnameBindings"
  | "envBindings"
  | "bindingQuarantine"
  | "members"
  | "sessionOwners"
  | "sessionOwnerChecks"
  | "queue"
  | "drain";

/** KEYS[1], KEYS[2], … of each session script. */
const SESSION_SCRIPT_KEYS = {
  "register-session": [
    "sessions",
    "clients",
    "hostnameBindings",
    "envBindings",
    "bindingQuarantine",
    "drain",
    "generation",
    "sessionExpiries",
    "sessionOwners",
    "sessionOwnerChecks",
  ],
  "heartbeat-session": ["sessions", "clients", "queue", "drain", "hostnameBindings", "generation", "sessionExpiries"],
  "deregister-session": ["sessions", "clients", "queue", "generation", "sessionExpiries"],
  "gc-fleet": ["sessions", "clients", "hostnameBindings", "envBindings", "members", "sessionExpiries"],
  "apply-drain": ["drain", "clients", "sessions", "sessionExpiries"],
} as const satisfies Record<string, readonly SessionKeyName[]>;

export type SessionScript = keyof typeof SESSION_SCRIPT_KEYS;

function sessionKey(keys: Keys, name: SessionKeyName, ids: SessionKeyIds): string {
  switch (name) {
    case "sessions":
      return keys.sessions;
    case "sessionExpiries":
      return keys.sessionExpiries;
    case "clients":
      return keys.clientOwners;
    case "generation":
      return keys.generation;
    case "hostnameBindings":
      return keys.hostnameBindings;
    case "envBindings":
      return keys.envBindings;
    case "bindingQuarantine":
      return keys.bindingQuarantine;
    case "members":
      return keys.members;
    case "sessionOwners":
      return keys.sessionOwners;
    case "sessionOwnerChecks":
      return keys.sessionOwnerChecks;
    case "queue":
      if (ids.sessionId === undefined) throw new Error("the control queue key needs a sessionId");
      return keys.queue(ids.sessionId);
    case "drain":
      if (ids.clientId === undefined) throw new Error("the drain key needs a clientId");
      return keys.drain(ids.clientId);
  }
}

/** The KEYS list of one session script, in the order its Lua expects. */
export function sessionScriptKeys(keys: Keys, script: SessionScript, ids: SessionKeyIds = {}): string[] {
  return SESSION_SCRIPT_KEYS[script].map((name) => sessionKey(keys, name, ids));
}
