import { z } from "zod";
import { AUDIT_TYPES, type AuditKind, type AuditType } from "../audit/entry.ts";
import { badRequest } from "../errors/pinboard-error.ts";

export const DEFAULT_AUDIT_LIMIT = 100;
export const MAX_AUDIT_LIMIT = 500;

/** GET /registry/audit's query, validated. */
export interface AuditQuery {
  limit: number;
  /** An entry id from a previous page: only older entries. */
  before?: string;
  kind?: AuditKind;
  type?: AuditType;
}

/** Each parameter with the one error a bad value of it answers. */
const PARAMETERS = {
  limit: {
    schema: z
      .string()
      .regex(/^\d{1,3}$/)
      .transform(Number)
      .pipe(z.number().int().min(1).max(MAX_AUDIT_LIMIT)),
    error: "invalid limit",
  },
  // A stream id as Redis writes it: milliseconds, a dash, a sequence number.
  before: { schema: z.string().regex(/^\d{1,19}-\d{1,19}$/), error: "invalid before" },
  kind: { schema: z.enum(["action", "event"]), error: "invalid kind" },
  type: { schema: z.enum(AUDIT_TYPES), error: "invalid type" },
} as const;

/**
 * Validates the query: limit an integer from 1 to 500 (default 100), before a stream id, kind
 * action or event, type one of the entry types; each bad one is 400 with its own error
 * (`{"error":"invalid limit"}`, …), judged in that order. Other parameters are ignored.
 */
export function parseAuditQuery(query: Record<string, string | undefined>): AuditQuery {
  const out: AuditQuery = { limit: DEFAULT_AUDIT_LIMIT };
  for (const [name, { schema, error }] of Object.entries(PARAMETERS)) {
    const raw = query[name];
    if (raw === undefined) continue;
    const parsed = schema.safeParse(raw);
    if (!parsed.success) throw badRequest(error);
    Object.assign(out, { [name]: parsed.data });
  }
  return out;
}
