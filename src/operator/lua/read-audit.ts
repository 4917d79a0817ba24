import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import { pairs, type RedisPort, type RedisReply } from "../../redis/port.ts";
import { readAuditScriptCall } from "./scripts.generated.ts";

export interface ReadAuditInput {
  /** An entry id: only older entries; "" for the newest. */
  before: string;
  /** Entries to look at, at most. */
  count: number;
  /** "" for both kinds. */
  kind: string;
  /** "" for every type. */
  type: string;
  /** Namespaces, one per line: only entries whose target names one (a superset of the visible); "" for all. */
  names: string;
}

export interface AuditBatch {
  /** The entries kept, newest first, with their stream fields. */
  entries: Array<{ id: string; fields: Record<string, string> }>;
  /** Where the next batch starts when older entries remain, else "". */
  next: string;
}

/** One batch of the audit trail, newest first (lua/read-audit-1.lua). */
export async function readAudit(redis: RedisPort, keys: Keys, input: ReadAuditInput): Promise<AuditBatch> {
  const reply = (await runCall(redis, readAuditScriptCall({ audit: keys.audit }, input))) as RedisReply[];
  const entries: AuditBatch["entries"] = [];
  for (let i = 1; i + 1 < reply.length; i += 2) {
    entries.push({ id: String(reply[i]), fields: pairs((reply[i + 1] ?? []) as RedisReply[]) });
  }
  return { entries, next: String(reply[0] ?? "") };
}
