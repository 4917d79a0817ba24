import { z } from "zod";

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

export const RESOLUTION_OUTCOMES = [
  "forward",
  "unknown-ns",
  "no-backends",
  "quarantine",
  "not-serving",
  "no-hostname-workers",
  "binding-quarantine",
  "takeover-pending",
  "env-conflict",
  "nack",
  // Refusals the contract's table names that /registry/health counts under their own outcome.
  "takeover-denied",
  "inflight",
] as const;

export const healthOk = z.strictObject({
  resolutions: z.partialRecord(z.enum(RESOLUTION_OUTCOMES), nonNegInt),
  connections: nonNegInt,
  quarantineMs: nonNegInt,
  uptimeMs: nonNegInt,
  rssBytes: z.number().int().positive().optional(),
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

export const windDownOk = z.strictObject({ queued: z.union([z.boolean(), nonNegInt]) });
export const drainOk = z.strictObject({ drained: z.literal(true) });
export const undrainOk = z.strictObject({ revoked: z.boolean() });
export const healthzOk = z.strictObject({ ok: z.literal(true) });
export const openApiOk = z.looseObject({ openapi: z.literal("3.1.0"), paths: z.record(z.string(), z.unknown()) });
