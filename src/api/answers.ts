import { z } from "zod";
import type { AuditAction, AuditEvent, AuditVia } from "../audit/entry.ts";
import { REFUSAL_KINDS } from "../operator/refusal-kinds.ts";
import { REFUSAL_OUTCOMES } from "../placement/refusal-outcomes.ts";

/**
 * The 200 bodies of Pinboard's JSON routes, as the protocol fixes them (docs/protocol.md): exact
 * key sets (strict objects: a secret, an account or any other extra field fails), the types and
 * the literal values the protocol names. /openapi.json describes the answers with these, and the
 * tests parse every 200 they get with them.
 */

const int = z.number().int();
const nonNegInt = int.nonnegative();
const ns = z.string().regex(/^\/[^/]+$/);

const windDownMessage = z.strictObject({
  msgId: z.string().min(1),
  type: z.literal("wind_down"),
  ns,
  id: z.string().min(1),
  /** Relative seconds at peek time; null revokes. */
  deadline: nonNegInt.nullable(),
});

// ── worker protocol ──────────────────────────────────────────────────────────────────────────

export const registerOk = z.strictObject({
  sessionId: z.string().min(1),
  expiresInMs: z.number().int().positive(),
  draining: z.boolean(),
  drainDeadline: nonNegInt.optional(),
  duplicates: z.array(z.strictObject({ ns, id: z.string().min(1) })).optional(),
});

export const heartbeatOk = z.strictObject({
  expiresInMs: z.number().int().positive(),
  draining: z.boolean(),
  drainDeadline: nonNegInt.optional(),
  degraded: z.literal(true).optional(),
  messages: z.array(windDownMessage).optional(),
});

export const releaseOk = z.strictObject({ released: nonNegInt });
export const tagOk = z.strictObject({ tagged: z.boolean() });
export const deregisterOk = z.strictObject({});

// ── operator endpoints ───────────────────────────────────────────────────────────────────────

/** What /registry/health counts resolutions under: the one success, then every refusal. */
export const RESOLUTION_OUTCOMES = ["forward", ...REFUSAL_OUTCOMES] as const;

export const healthOk = z.strictObject({
  resolutions: z.partialRecord(z.enum(RESOLUTION_OUTCOMES), nonNegInt),
  connections: nonNegInt,
  quarantineMs: nonNegInt,
  uptimeMs: nonNegInt,
  rssBytes: z.number().int().positive().optional(),
});

const HISTORY_SLOT_MS = 10_000;
const latencyMs = z.number().nonnegative().nullable();

/**
 * An extension: this node's last 15 minutes in 90 slots of 10 s, oldest first, the last holding
 * `now`; a slot without forwards has null percentiles, and only counted kinds are named.
 */
export const historyOk = z
  .strictObject({
    slotMs: z.literal(HISTORY_SLOT_MS),
    now: nonNegInt,
    points: z
      .array(
        z.strictObject({
          at: nonNegInt.multipleOf(HISTORY_SLOT_MS),
          forwards: nonNegInt,
          refusals: z.partialRecord(z.enum(REFUSAL_KINDS), z.number().int().positive()),
          p50Ms: latencyMs,
          p99Ms: latencyMs,
        }),
      )
      .length(90),
  })
  .superRefine(({ now, points }, ctx) => {
    const last = points.at(-1);
    if (last && !(last.at <= now && now < last.at + HISTORY_SLOT_MS))
      ctx.addIssue({ code: "custom", message: "the last point is not the slot of `now`" });
    points.forEach((p, i) => {
      if (i > 0 && p.at !== points[i - 1]!.at + HISTORY_SLOT_MS)
        ctx.addIssue({ code: "custom", path: ["points", i, "at"], message: "slots are not consecutive" });
      if ((p.forwards === 0) !== (p.p50Ms === null) || (p.p50Ms === null) !== (p.p99Ms === null))
        ctx.addIssue({ code: "custom", path: ["points", i], message: "percentiles are null exactly without forwards" });
      if (p.p50Ms !== null && p.p99Ms !== null && p.p50Ms > p.p99Ms)
        ctx.addIssue({ code: "custom", path: ["points", i], message: "p50Ms above p99Ms" });
    });
  });

/** A live record with secret and account stripped (GET /registry/workers, overview). */
export const publicWorker = z.strictObject({
  sessionId: z.string().min(1),
  clientId: z.string().min(1),
  advertiseUrl: z.string().regex(/^https?:\/\/[^/]/),
  namespaces: z.array(ns),
  hostname: z.string().nullable(),
  envs: z.record(ns, z.string()),
  takeover: z.enum(["wind_down", "deny"]).nullable(),
  headroom: z.number(),
  draining: z.boolean(),
  degradedSince: z.number().optional(),
  /** An extension on /registry/workers: a running outlier ejection's end (ms). */
  ejectedUntil: z.number().optional(),
  expiry: z.number(),
});

export const workersOk = z.strictObject({ workers: z.array(publicWorker) });

export const overviewOk = z.strictObject({
  workers: z.array(publicWorker),
  bindings: z.strictObject({
    hostnames: z.record(z.string(), z.string()),
    envs: z.record(z.string(), z.enum(["wind_down", "deny"])),
  }),
  namespaces: z.array(
    z.strictObject({
      hostname: z.string().nullable(),
      env: z.string().nullable(),
      namespace: ns,
      sessionIds: z.array(z.string().min(1)),
      // `epoch` and `alarm` only in a paged answer (with `limit`).
      entries: z.array(
        z.strictObject({
          id: z.string().min(1),
          sessionId: z.string().min(1),
          epoch: z.string().regex(/^\d+$/).optional(),
          expiry: z.number().optional(),
          tag: z.string().min(1).optional(),
          alarm: z.number().optional(),
        }),
      ),
    }),
  ),
  /** With `limit`: where the next page starts; absent on the last page. */
  cursor: z.string().min(1).optional(),
});

const statsHead = { sessionId: z.string().min(1), clientId: z.string().min(1), hostname: z.string().nullable() };
export const statsOk = z.strictObject({
  workers: z.array(
    z.union([
      z.strictObject({ ...statsHead, stats: z.record(z.string(), z.unknown()) }),
      z.strictObject({ ...statsHead, error: z.literal("unreachable") }),
    ]),
  ),
});

/**
 * An extension: the id's row in each env the claim covers (GET /registry/placement). `expiry` is
 * the wind-down fence's deadline (absent without one) and `fence` its state by Redis' clock;
 * `overwritten` the epoch of a pending durability wake; `instance` the live owner's
 * `/_pinned/stats` item for the id (null when it holds none, or the owner is dead).
 */
export const placementOk = z.strictObject({
  placements: z
    .array(
      z.strictObject({
        namespace: ns,
        id: z.string().min(1),
        env: z.string().nullable(),
        hostname: z.string().nullable(),
        /** Empty on an ownerless placeholder row. */
        sessionId: z.string(),
        clientId: z.string().min(1).nullable(),
        owner: z.enum(["live", "dead"]),
        /** Null on an ownerless placeholder row. */
        epoch: z.string().regex(/^\d+$/).nullable(),
        expiry: nonNegInt.optional(),
        tag: z.string().min(1).optional(),
        fence: z.enum(["none", "pending", "passed"]),
        overwritten: z.string().regex(/^\d+$/).nullable(),
        alarm: z.number().nullable(),
        instance: z
          .union([z.strictObject({ error: z.literal("unreachable") }), z.record(z.string(), z.unknown())])
          .nullable(),
      }),
    )
    .min(1),
});

/** An extension: placements per visible live worker, counted inside Redis (GET /registry/spread). */
export const spreadOk = z.strictObject({
  countedAt: nonNegInt,
  complete: z.boolean(),
  workers: z.array(z.strictObject({ sessionId: z.string().min(1), placements: nonNegInt })),
  unowned: nonNegInt,
});

export const windDownOk = z.strictObject({ queued: z.union([z.boolean(), nonNegInt]) });
export const drainOk = z.strictObject({ drained: z.literal(true) });
export const undrainOk = z.strictObject({ revoked: z.boolean() });
export const healthzOk = z.strictObject({ ok: z.literal(true) });
export const openApiOk = z.looseObject({ openapi: z.literal("3.1.0"), paths: z.record(z.string(), z.unknown()) });

// ── the audit trail (an extension: GET /registry/audit) ───────────────────────────────────────

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
      advertiseUrl: z.string().regex(/^https?:\/\/[^/]/),
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

export const auditOk = z.strictObject({
  entries: z.array(auditEntry),
  /** The `before` of the next page; absent when the trail holds nothing older. */
  cursor: streamId.optional(),
});
