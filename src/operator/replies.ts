import { z } from "zod";
import { REFUSAL_OUTCOMES } from "../contract/refusal-outcomes.ts";
import { httpUrl, nonNegInt, namespace as ns } from "../http/reply-fields.ts";
import { REFUSAL_KINDS } from "../metrics/refusal-kinds.ts";
import { SLOT_MS, SLOTS } from "../metrics/traffic-history.ts";

/**
 * The replies (200 bodies) of the operator routes, as the protocol fixes them (docs/protocol.md,
 * "Operator endpoints"): exact key sets (strict objects: a secret, an account or any other extra
 * field fails), the types and the literal values the protocol names. The route table
 * (./route-table.ts) names them; the CLI parses them leniently (src/cli/replies.ts); the
 * console takes their types. The audit trail's reply is ./audit-reply.ts.
 */

/** What /registry/health counts resolutions under: the one success, then every refusal. */
export const RESOLUTION_OUTCOMES = ["forward", ...REFUSAL_OUTCOMES] as const;

export const healthReply = z.strictObject({
  resolutions: z.partialRecord(z.enum(RESOLUTION_OUTCOMES), nonNegInt),
  connections: nonNegInt,
  quarantineMs: nonNegInt,
  uptimeMs: nonNegInt,
  rssBytes: z.number().int().positive().optional(),
});

const latencyMs = z.number().nonnegative().nullable();

/**
 * An extension: this node's last 15 minutes in 90 slots of 10 s, oldest first, the last holding
 * `now`; a slot without forwards has null percentiles, and only counted kinds are named.
 */
export const historyReply = z
  .strictObject({
    slotMs: z.literal(SLOT_MS),
    now: nonNegInt,
    points: z
      .array(
        z.strictObject({
          at: nonNegInt.multipleOf(SLOT_MS),
          forwards: nonNegInt,
          refusals: z.partialRecord(z.enum(REFUSAL_KINDS), z.number().int().positive()),
          p50Ms: latencyMs,
          p99Ms: latencyMs,
        }),
      )
      .length(SLOTS),
  })
  .superRefine(({ now, points }, ctx) => {
    const last = points.at(-1);
    if (last && !(last.at <= now && now < last.at + SLOT_MS))
      ctx.addIssue({ code: "custom", message: "the last point is not the slot of `now`" });
    points.forEach((p, i) => {
      if (i > 0 && p.at !== points[i - 1]!.at + SLOT_MS)
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
  advertiseUrl: httpUrl,
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

export type PublicWorker = z.infer<typeof publicWorker>;

export const workersReply = z.strictObject({ workers: z.array(publicWorker) });

export const overviewReply = z.strictObject({
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
export const statsReply = z.strictObject({
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
export const placementReply = z.strictObject({
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
export const spreadReply = z.strictObject({
  countedAt: nonNegInt,
  complete: z.boolean(),
  workers: z.array(z.strictObject({ sessionId: z.string().min(1), placements: nonNegInt })),
  unowned: nonNegInt,
});

export const windDownReply = z.strictObject({ queued: z.union([z.boolean(), nonNegInt]) });
export const drainReply = z.strictObject({ drained: z.literal(true) });
export const undrainReply = z.strictObject({ revoked: z.boolean() });
