import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import type { AuditRecord } from "../entry.ts";
import { appendAuditScriptCall } from "./scripts.generated.ts";

/** Appends one entry to the audit trail (lua/append-audit-1.lua): its stream id. */
export async function appendAudit(redis: RedisPort, keys: Keys, cap: number, record: AuditRecord): Promise<string> {
  const call = appendAuditScriptCall(
    { audit: keys.audit },
    {
      cap,
      kind: record.kind,
      type: record.type,
      subject: record.subject ?? "",
      via: record.via,
      target: JSON.stringify(record.target),
      detail: JSON.stringify(record.detail),
    },
  );
  return String(await runCall(redis, call));
}
