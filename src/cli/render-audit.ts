import type { AuditEntryView, AuditReply } from "./replies.ts";
import { NONE, renderTable } from "./table.ts";

/**
 * `pinboard audit` for humans: one line per entry, newest first, at the local time of the
 * machine that prints it, with what the entry touched and what it carried in a few words.
 */
export function renderAudit(answer: AuditReply): string {
  if (answer.entries.length === 0) return "no audit entries this credential may see";
  const table = renderTable(
    [
      { header: "TIME", cell: (e: AuditEntryView) => localTime(e.at) },
      { header: "TYPE", cell: (e) => e.type },
      { header: "BY", cell: (e) => e.subject ?? NONE },
      { header: "VIA", cell: (e) => e.via },
      { header: "TARGET", cell: (e) => targetText(e.target) },
      { header: "DETAIL", cell: (e) => detailText(e.detail) },
    ],
    answer.entries,
  );
  return answer.cursor === undefined ? table : `${table}\n(older entries: pinboard audit --before ${answer.cursor})`;
}

/** Local wall-clock time, to the second: 2025-03-04 17:05:09. */
export function localTime(ms: number): string {
  const d = new Date(ms);
  const two = (n: number) => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ` +
    `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`
  );
}

/** client worker-a (/threads,/rooms), /threads/t-42 @prod, or "fleet" for a fleet-wide entry. */
export function targetText(target: Record<string, unknown>): string {
  const text = (key: string) => (typeof target[key] === "string" ? (target[key] as string) : undefined);
  const parts: string[] = [];
  const clientId = text("clientId");
  if (clientId !== undefined) {
    const namespaces = Array.isArray(target.namespaces) ? target.namespaces.join(",") : "";
    parts.push(namespaces ? `client ${clientId} (${namespaces})` : `client ${clientId}`);
  }
  const namespace = text("namespace");
  if (namespace !== undefined) parts.push(text("id") !== undefined ? `${namespace}/${text("id")}` : namespace);
  if (text("env") !== undefined) parts.push(`@${text("env")}`);
  if (text("hostname") !== undefined) parts.push(`on ${text("hostname")}`);
  return parts.length > 0 ? parts.join(" ") : "fleet";
}

/** key=value pairs, nested objects as JSON. */
function detailText(detail: Record<string, unknown>): string {
  const pairs = Object.entries(detail).map(
    ([key, value]) => `${key}=${typeof value === "object" && value !== null ? JSON.stringify(value) : String(value)}`,
  );
  return pairs.length > 0 ? pairs.join(" ") : NONE;
}
