import { z } from "zod";
import type { AuditAction, AuditEvent, AuditVia } from "../audit/entry.ts";
import { httpUrl, int, nonNegInt, namespace as ns } from "../http/reply-fields.ts";

/** The reply of GET /registry/audit (an extension): the audit trail's entries, newest first. */

const auditTarget = z.strictObject({
  namespace: ns.optional(),
  id: z.string().min(1).optional(),
  env: z.string().min(1).optional(),
  namespaces: z.array(ns).optional(),
  envs: z.record(ns, z.string().min(1)).optional(),
  hostname: z.string().min(1).optional(),
  clientId: z.string().min(1).optional(),
  sessionId: z.string().min(1).optional(),
  /** A worker's namespaces past the listed ones, when the list was too long for the entry. */
  namespacesOmitted: int.positive().optional(),
});
const streamId = z.string().regex(/^\d+-\d+$/);
const queued = z.union([z.boolean(), nonNegInt]);
const auditHead = { id: streamId, at: nonNegInt, target: auditTarget };

/** An operator action: the credential's sub, and how the request came (the Pinboard-Via header). */
const auditAction = <T extends AuditAction, D extends z.ZodType>(type: T, detail: D) =>
  z.strictObject({
    ...auditHead,
    kind: z.literal("action"),
    type: z.literal(type),
    subject: z.string().min(1),
    via: z.enum(["api", "console", "cli"]),
    detail,
  });
/** A fleet event: no subject; the part of Pinboard that noticed it. */
const auditEvent = <T extends AuditEvent, D extends z.ZodType>(type: T, via: readonly AuditVia[], detail: D) =>
  z.strictObject({
    ...auditHead,
    kind: z.literal("event"),
    type: z.literal(type),
    subject: z.null(),
    via: z.enum(via as [AuditVia, ...AuditVia[]]),
    detail,
  });

const counts = z.record(z.string(), nonNegInt);
export const auditEntry = z.discriminatedUnion("type", [
  auditAction("wind_down", z.strictObject({ deadline: z.number().nonnegative(), deadlineAt: nonNegInt, queued })),
  auditAction("clear_fence", z.strictObject({ queued })),
  auditAction(
    "drain",
    z.strictObject({ deadline: z.number().nonnegative().nullable(), deadlineAt: nonNegInt.optional() }),
  ),
  auditAction("undrain", z.strictObject({ revoked: z.boolean() })),
  auditAction(
    "sweep",
    z.strictObject({
      ran: z.boolean(),
      sessions: nonNegInt.optional(),
      prunedMirrors: nonNegInt.optional(),
      resurrected: nonNegInt.optional(),
      orphans: nonNegInt.optional(),
      wakes: counts.optional(),
      alarms: counts.optional(),
      subrequests: nonNegInt.optional(),
      durationMs: nonNegInt,
    }),
  ),
  auditEvent(
    "worker.registered",
    ["registry"],
    z.strictObject({
      advertiseUrl: httpUrl,
      draining: z.boolean(),
      reclaimed: nonNegInt,
      duplicates: nonNegInt,
      replaced: z.string().min(1).optional(),
    }),
  ),
  auditEvent("worker.died", ["registry", "sweeper"], z.strictObject({ expiredAt: nonNegInt, draining: z.boolean() })),
  auditEvent("worker.drained", ["registry"], z.strictObject({ selfDraining: z.boolean() })),
  auditEvent("worker.deregistered", ["registry"], z.strictObject({})),
  auditEvent("worker.ejected", ["data-plane"], z.strictObject({ ejectedUntil: nonNegInt, ejections: int.positive() })),
  auditEvent("worker.readmitted", ["data-plane", "sweeper"], z.strictObject({ ejectedUntil: nonNegInt })),
]);

export const auditReply = z.strictObject({
  entries: z.array(auditEntry),
  /** The `before` of the next page; absent when the trail holds nothing older. */
  cursor: streamId.optional(),
});
export type AuditReply = z.infer<typeof auditReply>;
