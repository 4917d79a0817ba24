import type { AuditRecord } from "../../src/audit/entry.ts";

/**
 * A worker.registered entry as large as a real one gets: every field a worker chooses at its
 * length limit, listing `namespaces` (the trail cuts it to its byte cap). For the audit budget
 * test and bench/audit-readers.ts.
 */
export function largestRegistration(namespaces: string[]): AuditRecord {
  return {
    kind: "event",
    type: "worker.registered",
    subject: null,
    via: "registry",
    target: {
      sessionId: "s".repeat(32),
      clientId: "c".repeat(256),
      hostname: "h".repeat(253),
      namespaces,
      envs: Object.fromEntries(namespaces.map((ns) => [ns, "e".repeat(200)])),
    },
    detail: {
      advertiseUrl: `http://${"a".repeat(2000)}`,
      draining: false,
      reclaimed: 100_000,
      duplicates: 100_000,
      replaced: "r".repeat(32),
    },
  };
}
