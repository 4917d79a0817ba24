/**
 * What the audit trail holds: operator actions and fleet events, one capped Redis stream
 * (`{prefix}{global}:audit`, docs/operations.md#audit-trail). An entry names what happened
 * (`kind`, `type`), who did it (`subject`: the credential's `sub` for an action, null for an
 * event), how the request came (`via`) and what it touched (`target`, judged against an
 * operator's claim when the trail is read); `detail` holds what the action answered or the
 * event carried.
 */

/** Operator actions. `clear_fence` is a wind-down with deadline null. */
export const AUDIT_ACTIONS = ["wind_down", "clear_fence", "drain", "undrain", "sweep"] as const;
/** Fleet events. */
export const AUDIT_EVENTS = [
  "worker.registered",
  "worker.died",
  "worker.drained",
  "worker.deregistered",
  "worker.ejected",
  "worker.readmitted",
] as const;
export const AUDIT_TYPES = [...AUDIT_ACTIONS, ...AUDIT_EVENTS] as const;

/**
 * How an action reached Pinboard (api, console, cli: the Pinboard-Via header, or the CLI's local
 * sweep-now), or which part of Pinboard noticed an event.
 */
export const AUDIT_VIAS = ["api", "console", "cli", "registry", "sweeper", "data-plane"] as const;

export type AuditKind = "action" | "event";
export type AuditAction = (typeof AUDIT_ACTIONS)[number];
export type AuditEvent = (typeof AUDIT_EVENTS)[number];
export type AuditType = (typeof AUDIT_TYPES)[number];
export type AuditVia = (typeof AUDIT_VIAS)[number];

/**
 * What an entry touched. A placement or a namespace (wind-down): `namespace`, `id`, `env`, and
 * the owner's `hostname` when a wind-down by id judged one. A worker: `sessionId`, `clientId`,
 * `namespaces`, `hostname` and `envs` (hostname-aware mode), and `namespacesOmitted` when the list
 * was too long for the entry (AUDIT_ENTRY_MAX_BYTES). Fleet-wide (sweep): nothing.
 */
export interface AuditTarget {
  namespace?: string;
  id?: string;
  env?: string;
  namespaces?: string[];
  envs?: Record<string, string>;
  hostname?: string;
  clientId?: string;
  sessionId?: string;
  /** How many namespaces past the listed ones the worker has (only a long list is cut). */
  namespacesOmitted?: number;
}

/**
 * An entry's bytes at most, field names and values as stored: the script that appends cuts each
 * field a worker or operator chose to size, and lists a worker's namespaces (with their envs)
 * only while they fit, counting the rest (src/redis/lua/includes/audit.lua, whose constant this
 * states). With PINBOARD_AUDIT_MAX_ENTRIES the trail's byte budget (10,000 × 2 KiB ≈ 20 MiB).
 */
export const AUDIT_ENTRY_MAX_BYTES = 2048;

/** An entry as appended: Redis stamps its id and its time. */
export interface AuditRecord {
  kind: AuditKind;
  type: AuditType;
  /** The credential's sub (actions); null for events. */
  subject: string | null;
  via: AuditVia;
  target: AuditTarget;
  detail: Record<string, unknown>;
}

/** An entry as read: its stream id (the paging cursor) and its time, Redis-clock ms. */
export interface AuditEntry extends AuditRecord {
  id: string;
  at: number;
}

/** Who performed an operator action, and how the request came. */
export interface AuditActor {
  subject: string;
  via: AuditVia;
}

export const isAuditType = (value: string): value is AuditType => (AUDIT_TYPES as readonly string[]).includes(value);
export const isAuditVia = (value: string): value is AuditVia => (AUDIT_VIAS as readonly string[]).includes(value);
export const kindOf = (type: AuditType): AuditKind =>
  (AUDIT_ACTIONS as readonly string[]).includes(type) ? "action" : "event";
