import { z } from "zod";
import { type AuditEntry, isAuditType, isAuditVia, kindOf } from "../audit/entry.ts";
import type { PinboardClaim } from "../auth/claims.ts";
import { parseJsonObject } from "../contract/json-text.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { type AuditQuery, MAX_AUDIT_LIMIT } from "./audit-query.ts";
import { visibleEntry } from "./audit-scope.ts";
import { readAudit } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type AuditReadDeps = Pick<AppDeps, "config" | "redis" | "keys">;

/**
 * Entries one script call looks at (the first looks at `limit`, when fewer): at most 64 KiB at
 * AUDIT_ENTRY_MAX_BYTES each, a call keeps Redis well under a millisecond (bench/audit-readers.ts).
 */
export const AUDIT_SCAN_PER_CALL = 32;
/**
 * Entries one request looks at, at most, whatever the credential may see (the Redis work of a
 * read does not grow with how little of the trail it may see): past it the page stops, with a
 * cursor to go on from. As many as the largest page, so a credential that sees everything
 * always gets a full one.
 */
export const AUDIT_SCAN_PER_REQUEST = MAX_AUDIT_LIMIT;

export interface AuditPage {
  entries: AuditEntry[];
  /** The `before` of the next page; absent when the trail has nothing older. */
  cursor?: string;
}

/**
 * GET /registry/audit: the entries the credential may see (audit-scope.ts), newest first, at
 * most `limit`, older than `before`, of `kind` and `type` when given. The stream is read in
 * calls of at most AUDIT_SCAN_PER_CALL entries (the kind and type kept by the script, the scope
 * judged here) until the page is full, the trail ends or AUDIT_SCAN_PER_REQUEST entries were
 * looked at: a credential that sees few entries may get fewer than `limit`, none even, with a
 * cursor to go on from.
 */
export async function auditPage(deps: AuditReadDeps, claim: PinboardClaim, query: AuditQuery): Promise<AuditPage> {
  const entries: AuditEntry[] = [];
  let before = query.before ?? "";
  let scanned = 0;
  while (scanned < AUDIT_SCAN_PER_REQUEST) {
    const first = scanned === 0 ? query.limit : AUDIT_SCAN_PER_CALL;
    const count = Math.min(first, AUDIT_SCAN_PER_CALL, AUDIT_SCAN_PER_REQUEST - scanned);
    const read = await readAudit(deps.redis, deps.keys, {
      before,
      count,
      kind: query.kind ?? "",
      type: query.type ?? "",
      names: prefilter(claim),
    });
    scanned += count;
    for (const [i, raw] of read.entries.entries()) {
      const parsed = parseEntry(raw.id, raw.fields);
      const entry = parsed && visibleEntry(claim, parsed, deps.config.hostnameAware);
      if (!entry) continue;
      entries.push(entry);
      if (entries.length === query.limit) {
        const more = i < read.entries.length - 1 || read.next !== "";
        return more ? { entries, cursor: entry.id } : { entries };
      }
    }
    if (read.next === "") return { entries };
    before = read.next;
  }
  return { entries, cursor: before };
}

/** A claim with more namespaces than this is judged here only: each entry is checked for each. */
const PREFILTER_MAX_NAMESPACES = 32;

/**
 * The namespaces the script keeps entries of, so that entries a narrow credential may not see
 * are not sent at all: an entry is visible only when its target names one of the claim's
 * namespaces (audit-scope.ts). "" (keep all) for a claim with "*" or with many namespaces.
 */
function prefilter(claim: PinboardClaim): string {
  const { namespaces } = claim;
  return namespaces.includes("*") || namespaces.length > PREFILTER_MAX_NAMESPACES ? "" : namespaces.join("\n");
}

const name = z.string().min(1);
/** A target as stored; what scope is judged on must have its shape, the rest is dropped. */
const storedTarget = z.object({
  namespace: name.optional(),
  id: name.optional(),
  env: name.optional(),
  namespaces: z.array(name).optional(),
  envs: z.record(z.string(), name).optional(),
  hostname: name.optional(),
  clientId: name.optional(),
  sessionId: name.optional(),
  namespacesOmitted: z.number().int().positive().optional(),
});

/** A stream entry as the trail wrote it, or null for one it did not (hand-written, another version). */
function parseEntry(id: string, fields: Record<string, string>): AuditEntry | null {
  const { at, type = "", subject = "", via = "" } = fields;
  const target = storedTarget.safeParse(parseObject(fields.target));
  const detail = parseObject(fields.detail);
  if (!isAuditType(type) || !isAuditVia(via) || fields.kind !== kindOf(type) || !target.success || !detail) return null;
  if (at === undefined || !/^\d+$/.test(at)) return null;
  return {
    id,
    at: Number(at),
    kind: kindOf(type),
    type,
    subject: subject === "" ? null : subject,
    via,
    target: target.data,
    detail,
  };
}

function parseObject(json: string | undefined): Record<string, unknown> | null {
  return json === undefined ? null : parseJsonObject(json);
}
