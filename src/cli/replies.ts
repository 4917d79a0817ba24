import { z } from "zod";
import { OPERATOR_ROUTES } from "../operator/route-table.ts";
import { lenient } from "./lenient.ts";

/**
 * The replies of the operator routes as the CLI reads them: the routes' own reply schemas
 * (src/operator/route-table.ts) in their lenient form (./lenient.ts). The CLI is a boundary: a
 * reply that does not match is reported, never guessed at; unknown fields are dropped, so a
 * newer server still renders.
 */

export const workersReply = lenient(OPERATOR_ROUTES.workers.reply);
export type WorkersReply = z.infer<typeof workersReply>;
export type WorkerView = WorkersReply["workers"][number];

export const overviewReply = lenient(OPERATOR_ROUTES.overview.reply);
export type OverviewReply = z.infer<typeof overviewReply>;
export type NamespaceGroup = OverviewReply["namespaces"][number];

export const statsReply = lenient(OPERATOR_ROUTES.stats.reply);
export type StatsReply = z.infer<typeof statsReply>;

export const healthReply = lenient(OPERATOR_ROUTES.health.reply);
export type HealthReply = z.infer<typeof healthReply>;

export const windDownReply = lenient(OPERATOR_ROUTES.windDown.reply);
export const drainReply = lenient(OPERATOR_ROUTES.drain.reply);
export const undrainReply = lenient(OPERATOR_ROUTES.undrain.reply);

/** GET /registry/audit: entries newest first; the CLI shows target and detail as they come. */
export const auditReply = lenient(OPERATOR_ROUTES.audit.reply);
export type AuditReply = z.infer<typeof auditReply>;
export type AuditEntryView = AuditReply["entries"][number];

/**
 * A worker's own /_pinned/stats passes through Pinboard (filtered; the stats reply declares it
 * a record) and may come from any worker implementation: the fields the table shows are read
 * when they have the worker library's shape and shown as "-" otherwise.
 */
const tolerant = <T extends z.ZodType>(schema: T) => schema.optional().catch(undefined);
export const workerStatsView = z.looseObject({
  headroom: tolerant(z.number()),
  draining: tolerant(z.boolean()),
  degraded: tolerant(z.boolean()),
  leaseHealthy: tolerant(z.boolean()),
  process: tolerant(z.object({ uptimeMs: z.number().optional(), rssBytes: z.number().optional() })),
  instances: tolerant(z.array(z.looseObject({ inflight: z.number().optional(), sockets: z.number().optional() }))),
});

/** The body of an error answer: {"error": "…"}. */
export const errorBody = z.object({ error: z.string() });

/** One line per issue, for "unexpected answer" messages. */
export function describeIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
    .join("; ");
}
