import { describe, expect, it } from "vitest";
import type { AuditEntry, AuditTarget } from "../../src/audit/entry.ts";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { visibleEntry } from "../../src/operator/audit-scope.ts";

/**
 * Which audit entries an operator's claim shows (GET /registry/audit): judged like
 * /registry/workers judges a record, on the target's namespaces, and in hostname-aware mode on its
 * hostname and envs too; fleet-wide entries only to a claim over every namespace.
 */

const claim = (c: Partial<PinboardClaim>): PinboardClaim => ({ namespaces: ["*"], ...c });
const entry = (target: AuditTarget, type: AuditEntry["type"] = "drain"): AuditEntry => ({
  id: "1-0",
  at: 1,
  kind: type === "sweep" || type === "drain" ? "action" : "event",
  type,
  subject: "op",
  via: "api",
  target,
  detail: {},
});
const worker = (namespaces: string[], extra: Partial<AuditTarget> = {}) =>
  entry({ sessionId: "s", clientId: "c", namespaces, ...extra });

describe("visibleEntry, single mode", () => {
  it("judges a cut namespace list on the names it lists; only a claim with * is told how many were omitted", () => {
    const cut = worker(["/a", "/b"], { namespacesOmitted: 254 });
    expect(visibleEntry(claim({}), cut, false)).toBe(cut);
    const narrow = { sessionId: "s", clientId: "c", namespaces: ["/a", "/b"] };
    expect(visibleEntry(claim({ namespaces: ["/a", "/b"] }), cut, false)?.target).toEqual(narrow);
    expect(visibleEntry(claim({ namespaces: ["/b", "/z"] }), cut, false)?.target).toEqual({
      ...narrow,
      namespaces: ["/b"],
    });
    expect(visibleEntry(claim({ namespaces: ["/z"] }), cut, false)).toBeNull();
  });

  it("shows a namespace's entry to a claim with it or *, never to a claim without", () => {
    const windDown = entry({ namespace: "/a", id: "x" }, "wind_down");
    expect(visibleEntry(claim({ namespaces: ["/a"] }), windDown, false)).toBe(windDown);
    expect(visibleEntry(claim({}), windDown, false)).toBe(windDown);
    expect(visibleEntry(claim({ namespaces: ["/b"] }), windDown, false)).toBeNull();
  });

  it("shows a worker's entry when one of its namespaces is allowed, cut down to those", () => {
    expect(visibleEntry(claim({ namespaces: ["/b"] }), worker(["/a", "/b"]), false)?.target).toEqual({
      sessionId: "s",
      clientId: "c",
      namespaces: ["/b"],
    });
    expect(visibleEntry(claim({ namespaces: ["/c"] }), worker(["/a", "/b"]), false)).toBeNull();
  });

  it("shows a fleet-wide entry (sweep) only to a claim with * in namespaces; hostname claims do not count", () => {
    const sweep = entry({}, "sweep");
    expect(visibleEntry(claim({}), sweep, false)).toBe(sweep);
    expect(visibleEntry(claim({ hostnames: ["h"] }), sweep, false)).toBe(sweep);
    expect(visibleEntry(claim({ namespaces: ["/a", "/b"] }), sweep, false)).toBeNull();
  });

  it("ignores hostname and env claims, as every operator route does in single mode", () => {
    const e = worker(["/a"]);
    expect(visibleEntry(claim({ hostnames: ["other"], envs: ["prod"] }), e, false)).toBe(e);
  });
});

describe("visibleEntry, hostname-aware mode", () => {
  const aware = worker(["/a", "/b"], { hostname: "h1", envs: { "/a": "prod", "/b": "canary" } });

  it("judges the hostname, then each namespace's env, cutting envs down with the namespaces", () => {
    expect(visibleEntry(claim({ hostnames: ["h2"] }), aware, true)).toBeNull();
    expect(visibleEntry(claim({ hostnames: ["H1"] }), aware, true)).toBe(aware);
    expect(visibleEntry(claim({ envs: ["canary"] }), aware, true)?.target).toEqual({
      sessionId: "s",
      clientId: "c",
      namespaces: ["/b"],
      hostname: "h1",
      envs: { "/b": "canary" },
    });
    expect(visibleEntry(claim({ envs: ["staging"] }), aware, true)).toBeNull();
  });

  it("a wind-down is judged on its env; one without a hostname only by a claim without a hostname restriction", () => {
    const byNamespace = entry({ namespace: "/a", env: "prod" }, "wind_down");
    expect(visibleEntry(claim({ envs: ["prod"] }), byNamespace, true)).toBe(byNamespace);
    expect(visibleEntry(claim({ envs: ["staging"] }), byNamespace, true)).toBeNull();
    expect(visibleEntry(claim({ hostnames: ["h1"] }), byNamespace, true)).toBeNull();
    const byId = entry({ namespace: "/a", id: "x", env: "prod", hostname: "h1" }, "wind_down");
    expect(visibleEntry(claim({ hostnames: ["h1"] }), byId, true)).toBe(byId);
  });

  it("a fleet-wide entry needs every namespace and no hostname or env restriction", () => {
    const sweep = entry({}, "sweep");
    expect(visibleEntry(claim({}), sweep, true)).toBe(sweep);
    expect(visibleEntry(claim({ hostnames: ["h1"] }), sweep, true)).toBeNull();
    expect(visibleEntry(claim({ envs: ["prod"] }), sweep, true)).toBeNull();
  });
});
