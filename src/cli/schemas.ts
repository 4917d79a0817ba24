import { z } from "zod";

/**
 * The shapes of the operator routes' answers, as the CLI renders them (docs/protocol.md, "Operator
 * endpoints"). The CLI is a boundary: an answer that does not match is reported, never guessed
 * at. Unknown fields are dropped, so a newer server still renders.
 */

const ms = z.number().finite();

export const workerSchema = z.object({
  sessionId: z.string(),
  clientId: z.string(),
  advertiseUrl: z.string(),
  namespaces: z.array(z.string()),
  hostname: z.string().nullable(),
  envs: z.record(z.string(), z.string()),
  takeover: z.string().nullable(),
  headroom: z.number(),
  draining: z.boolean(),
  degradedSince: ms.optional(),
  expiry: ms,
});
export type WorkerView = z.infer<typeof workerSchema>;

export const workersAnswer = z.object({ workers: z.array(workerSchema) });
export type WorkersAnswer = z.infer<typeof workersAnswer>;

export const entrySchema = z.object({
  id: z.string(),
  sessionId: z.string(),
  expiry: ms.optional(),
  tag: z.string().optional(),
});

export const namespaceGroupSchema = z.object({
  hostname: z.string().nullable(),
  env: z.string().nullable(),
  namespace: z.string(),
  sessionIds: z.array(z.string()),
  entries: z.array(entrySchema),
});
export type NamespaceGroup = z.infer<typeof namespaceGroupSchema>;

export const overviewAnswer = z.object({
  workers: z.array(workerSchema),
  bindings: z.object({
    hostnames: z.record(z.string(), z.string()),
    envs: z.record(z.string(), z.string()),
  }),
  namespaces: z.array(namespaceGroupSchema),
});
export type OverviewAnswer = z.infer<typeof overviewAnswer>;

/**
 * A worker's own /_pinned/stats passes through Pinboard (filtered) and may come from any worker
 * implementation: the fields the table shows are read when they have the worker library's
 * shape and shown as "-" otherwise.
 */
const lenient = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
export const workerStatsSchema = z.looseObject({
  headroom: lenient(z.number()),
  draining: lenient(z.boolean()),
  degraded: lenient(z.boolean()),
  leaseHealthy: lenient(z.boolean()),
  process: lenient(z.object({ uptimeMs: z.number().optional(), rssBytes: z.number().optional() })),
  instances: lenient(z.array(z.looseObject({ inflight: z.number().optional(), sockets: z.number().optional() }))),
});

const statsHead = { sessionId: z.string(), clientId: z.string(), hostname: z.string().nullable() };
export const statsAnswer = z.object({
  workers: z.array(
    z.union([z.object({ ...statsHead, stats: workerStatsSchema }), z.object({ ...statsHead, error: z.string() })]),
  ),
});
export type StatsAnswer = z.infer<typeof statsAnswer>;

export const healthAnswer = z.object({
  resolutions: z.record(z.string(), z.number()),
  connections: z.number(),
  quarantineMs: z.number(),
  uptimeMs: z.number(),
  rssBytes: z.number().optional(),
});
export type HealthAnswer = z.infer<typeof healthAnswer>;

export const windDownAnswer = z.object({ queued: z.union([z.boolean(), z.number()]) });
export const drainAnswer = z.object({ drained: z.literal(true) });
export const undrainAnswer = z.object({ revoked: z.boolean() });

/** GET /registry/audit: entries newest first; target and detail are shown as they come. */
export const auditEntrySchema = z.object({
  id: z.string(),
  at: ms,
  kind: z.string(),
  type: z.string(),
  subject: z.string().nullable(),
  via: z.string(),
  target: z.record(z.string(), z.unknown()),
  detail: z.record(z.string(), z.unknown()),
});
export type AuditEntryView = z.infer<typeof auditEntrySchema>;
/** The cursor is an entry id (digits, a dash, digits): safe to print as it came. */
export const auditAnswer = z.object({
  entries: z.array(auditEntrySchema),
  cursor: z
    .string()
    .regex(/^\d+-\d+$/)
    .optional(),
});
export type AuditAnswer = z.infer<typeof auditAnswer>;

/** An error answer: {"error": "…"}. */
export const errorAnswer = z.object({ error: z.string() });

/** One line per issue, for "unexpected answer" messages. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}
