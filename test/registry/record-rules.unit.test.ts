import { describe, expect, it } from "vitest";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { envOf, parseRecord } from "../../src/registry/record.ts";
import { scopeViolation } from "../../src/registry/record-scope.ts";
import { drainDeadlineSeconds, newSessionId } from "../../src/registry/session-ids.ts";

/**
 * The pure parts of a stored registration: how a record is read back from Redis, which env a
 * namespace is served under, the first way a registration falls outside a credential's claim,
 * and the session ids and drain deadlines the read routes hand out.
 */

describe("parseRecord and envOf", () => {
  it("reads envs that cjson re-encoded as [] as none, and drops a degradedSince that is not a number", () => {
    const record = parseRecord(JSON.stringify({ sessionId: "s", env: "e", envs: [], degradedSince: "x" }));
    expect(record).toEqual({ sessionId: "s", env: "e", envs: {}, degradedSince: undefined });
    expect(parseRecord(JSON.stringify({ envs: null })).envs).toEqual({});
    expect(parseRecord(JSON.stringify({ envs: { "/a": "b" }, degradedSince: 5 }))).toEqual({
      envs: { "/a": "b" },
      degradedSince: 5,
    });
  });

  it("serves a namespace under its own env, else the record's, else single mode's *", () => {
    expect(envOf({ env: "blue", envs: { "/a": "green" } }, "/a")).toBe("green");
    expect(envOf({ env: "blue", envs: { "/a": "green" } }, "/b")).toBe("blue");
    expect(envOf({ env: undefined as unknown as string, envs: {} }, "/b")).toBe("*");
  });
});

describe("scopeViolation", () => {
  const fields = {
    namespaces: ["/a", "/b"],
    advertiseUrl: "http://w.example:9000",
    hostname: "app.example",
    env: "blue",
    envs: { "/b": "green" },
  };
  const claim = (extra: Partial<PinboardClaim> = {}): PinboardClaim => ({
    namespaces: ["/a", "/b"],
    allowedBackendHosts: ["w.example"],
    ...extra,
  });

  it("is null when the claim covers it all, in either mode", () => {
    expect(scopeViolation(claim(), fields, false)).toBeNull();
    expect(scopeViolation(claim({ hostnames: ["app.example"], envs: ["blue", "green"] }), fields, true)).toBeNull();
  });

  it("names the first namespace refused, before the backend", () => {
    expect(scopeViolation(claim({ namespaces: ["/a"], allowedBackendHosts: [] }), fields, false)).toBe(
      "namespace not allowed: /b",
    );
  });

  it("names the backend host, then the port", () => {
    expect(scopeViolation(claim({ allowedBackendHosts: ["other"] }), fields, false)).toBe(
      "backend host not allowed: w.example",
    );
    expect(scopeViolation(claim({ allowedPorts: [80] }), fields, true)).toBe("advertiseUrl port not allowed: 9000");
  });

  it("judges hostname and envs only in hostname-aware mode, each namespace's env in turn", () => {
    const narrow = claim({ hostnames: ["other"], envs: ["blue"] });
    expect(scopeViolation(narrow, fields, false)).toBeNull();
    expect(scopeViolation(narrow, fields, true)).toBe("hostname not allowed: app.example");
    expect(scopeViolation(claim({ envs: ["blue"] }), fields, true)).toBe("env not allowed: green");
    expect(scopeViolation(claim({ envs: ["green"] }), fields, true)).toBe("env not allowed: blue");
  });
});

describe("session ids and drain deadlines", () => {
  it("a session id is 32 lowercase hex digits, new each time", () => {
    const ids = new Set(Array.from({ length: 200 }, newSessionId));
    expect(ids.size).toBe(200);
    for (const id of ids) expect(id).toMatch(/^[0-9a-f]{32}$/);
    // Each byte is two digits, a small one zero-padded: over 200 ids some byte is below 16.
    expect([...ids].some((id) => /^(?:..)*0/.test(id))).toBe(true);
  });

  it("a timed drain's remaining whole seconds, rounded up, never below 0; none for a cordon", () => {
    expect(drainDeadlineSeconds("", 1000)).toBeUndefined();
    expect(drainDeadlineSeconds("11000", 1000)).toBe(10);
    expect(drainDeadlineSeconds("11001", 1000)).toBe(11);
    expect(drainDeadlineSeconds("10999", 1000)).toBe(10);
    expect(drainDeadlineSeconds("1000", 1000)).toBe(0);
    expect(drainDeadlineSeconds("500", 1000)).toBe(0);
  });
});
