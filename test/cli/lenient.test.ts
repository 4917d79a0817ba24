import { describe, expect, it } from "vitest";
import { lenient } from "../../src/cli/lenient.ts";
import { OPERATOR_ROUTES } from "../../src/operator/route-table.ts";

/**
 * The CLI reads each reply with the route's own schema made lenient: unknown fields, at any depth,
 * are dropped where the server's strict schema refuses them; a reply that does not match is still
 * refused.
 */

const worker = {
  sessionId: "s-1",
  clientId: "c-1",
  advertiseUrl: "http://10.0.0.1:8080",
  namespaces: ["/threads"],
  hostname: null,
  envs: {},
  takeover: null,
  headroom: 1,
  draining: false,
  expiry: 1_700_000_000_000,
};

describe("lenient", () => {
  const strict = OPERATOR_ROUTES.workers.reply;
  const loose = lenient(strict);

  it("drops unknown fields at every depth, where the strict schema refuses them", () => {
    const newer = { workers: [{ ...worker, futureField: 1 }], futureTop: true };
    expect(strict.safeParse(newer).success).toBe(false);
    expect(loose.parse(newer)).toEqual({ workers: [worker] });
  });

  it("still refuses a reply of another shape, and keeps the declared checks", () => {
    expect(loose.safeParse({ workers: [{ ...worker, draining: "no" }] }).success).toBe(false);
    expect(loose.safeParse({ workers: [{ ...worker, sessionId: "" }] }).success).toBe(false);
    expect(loose.safeParse({}).success).toBe(false);
  });

  it("reaches into unions and records (the audit entries' details)", () => {
    const entry = {
      id: "1-0",
      at: 1,
      target: { clientId: "c-1", later: "x" },
      kind: "action",
      type: "undrain",
      subject: "ops",
      via: "cli",
      detail: { revoked: true, later: 2 },
    };
    const parsed = lenient(OPERATOR_ROUTES.audit.reply).parse({ entries: [entry] });
    expect(parsed.entries[0]).toEqual({ ...entry, target: { clientId: "c-1" }, detail: { revoked: true } });
  });
});
