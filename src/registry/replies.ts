import { z } from "zod";
import { nonNegInt, namespace as ns } from "../http/reply-fields.ts";

/**
 * The replies (200 bodies) of the worker routes, as the protocol fixes them (docs/protocol.md):
 * exact key sets (strict objects: any extra field fails), the types and the literal values the
 * protocol names. The route table (./route-table.ts) names them.
 */

const windDownMessage = z.strictObject({
  msgId: z.string().min(1),
  type: z.literal("wind_down"),
  ns,
  id: z.string().min(1),
  /** Relative seconds at peek time; null revokes. */
  deadline: nonNegInt.nullable(),
});

export const registerReply = z.strictObject({
  sessionId: z.string().min(1),
  expiresInMs: z.number().int().positive(),
  draining: z.boolean(),
  drainDeadline: nonNegInt.optional(),
  duplicates: z.array(z.strictObject({ ns, id: z.string().min(1) })).optional(),
});

export const heartbeatReply = z.strictObject({
  expiresInMs: z.number().int().positive(),
  draining: z.boolean(),
  drainDeadline: nonNegInt.optional(),
  degraded: z.literal(true).optional(),
  messages: z.array(windDownMessage).optional(),
});

export const releaseReply = z.strictObject({ released: nonNegInt });
export const tagReply = z.strictObject({ tagged: z.boolean() });
export const deregisterReply = z.strictObject({});
