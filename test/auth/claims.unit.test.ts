import { describe, expect, it } from "vitest";
import {
  checkBackend,
  checkEnv,
  checkHostname,
  checkNamespace,
  coversNamespaces,
  effectivePort,
  filterNamespaces,
  isUnrestricted,
  type PinboardClaim,
  parsePinboardClaim,
} from "../../src/auth/claims.ts";

const claim = (extra: Partial<PinboardClaim> = {}): PinboardClaim => ({
  namespaces: ["/threads", "/docs"],
  allowedBackendHosts: ["10.0.0.5", "Worker.Example.com"],
  ...extra,
});

describe("checkNamespace", () => {
  it("allows listed namespaces and everything under *", () => {
    expect(checkNamespace(claim(), "/threads")).toBeNull();
    expect(checkNamespace(claim({ namespaces: ["*"] }), "/anything")).toBeNull();
  });
  it("names the refused namespace", () => {
    expect(checkNamespace(claim(), "/x")).toBe("namespace not allowed: /x");
    expect(checkNamespace(claim(), "/Threads")).toBe("namespace not allowed: /Threads");
  });
});

describe("checkBackend", () => {
  it("compares hosts case-insensitively", () => {
    expect(checkBackend(claim(), new URL("http://worker.example.COM:8080"))).toBeNull();
    expect(checkBackend(claim(), new URL("http://10.0.0.5"))).toBeNull();
  });
  it("names the refused host", () => {
    expect(checkBackend(claim(), new URL("http://10.0.0.6:8080"))).toBe("backend host not allowed: 10.0.0.6");
    expect(checkBackend(claim({ allowedBackendHosts: [] }), new URL("http://10.0.0.5"))).toBe(
      "backend host not allowed: 10.0.0.5",
    );
  });
  it("allows every host under *", () => {
    expect(checkBackend(claim({ allowedBackendHosts: ["*"] }), new URL("https://any.where:9"))).toBeNull();
  });
  it("matches IPv6 hosts written with or without brackets", () => {
    expect(checkBackend(claim({ allowedBackendHosts: ["::1"] }), new URL("http://[::1]:8080"))).toBeNull();
    expect(checkBackend(claim({ allowedBackendHosts: ["[::1]"] }), new URL("http://[::1]:8080"))).toBeNull();
    expect(checkBackend(claim({ allowedBackendHosts: ["::2"] }), new URL("http://[::1]:8080"))).toBe(
      "backend host not allowed: [::1]",
    );
  });
  it("checks the effective port only when allowedPorts is present", () => {
    const ports = claim({ allowedPorts: [8080, 443] });
    expect(checkBackend(claim(), new URL("http://10.0.0.5:1234"))).toBeNull();
    expect(checkBackend(ports, new URL("http://10.0.0.5:8080"))).toBeNull();
    expect(checkBackend(ports, new URL("http://10.0.0.5:1234"))).toBe("advertiseUrl port not allowed: 1234");
    expect(checkBackend(ports, new URL("https://10.0.0.5"))).toBeNull();
    expect(checkBackend(ports, new URL("http://10.0.0.5"))).toBe("advertiseUrl port not allowed: 80");
    expect(checkBackend(ports, new URL("http://10.0.0.5:80/"))).toBe("advertiseUrl port not allowed: 80");
  });
  it("judges the host before the port", () => {
    const ports = claim({ allowedPorts: [8080] });
    expect(checkBackend(ports, new URL("http://10.9.9.9:1"))).toBe("backend host not allowed: 10.9.9.9");
  });
  it("derives the default ports", () => {
    expect(effectivePort(new URL("http://h"))).toBe(80);
    expect(effectivePort(new URL("https://h"))).toBe(443);
    expect(effectivePort(new URL("https://h:8443"))).toBe(8443);
  });
});

describe("checkHostname and checkEnv", () => {
  it("allow anything when the list is absent", () => {
    expect(checkHostname(claim(), "eu-1")).toBeNull();
    expect(checkEnv(claim(), "prod")).toBeNull();
  });
  it("allow listed values case-insensitively and everything under *", () => {
    expect(checkHostname(claim({ hostnames: ["EU-1"] }), "eu-1")).toBeNull();
    expect(checkHostname(claim({ hostnames: ["*"] }), "us-2")).toBeNull();
    expect(checkEnv(claim({ envs: ["prod"] }), "PROD")).toBeNull();
    expect(checkEnv(claim({ envs: ["*"] }), "staging")).toBeNull();
  });
  it("name the refused value", () => {
    expect(checkHostname(claim({ hostnames: ["eu-1"] }), "us-2")).toBe("hostname not allowed: us-2");
    expect(checkHostname(claim({ hostnames: [] }), "eu-1")).toBe("hostname not allowed: eu-1");
    expect(checkEnv(claim({ envs: ["prod"] }), "staging")).toBe("env not allowed: staging");
  });
});

describe("namespace sets", () => {
  it("covers only when every namespace is allowed", () => {
    expect(coversNamespaces(claim(), ["/threads", "/docs"])).toBe(true);
    expect(coversNamespaces(claim(), ["/threads", "/x"])).toBe(false);
    expect(coversNamespaces(claim(), [])).toBe(true);
    expect(coversNamespaces(claim({ namespaces: ["*"] }), ["/a", "/b"])).toBe(true);
  });
  it("filters keeping order", () => {
    expect(filterNamespaces(claim(), ["/x", "/docs", "/threads"])).toEqual(["/docs", "/threads"]);
    expect(filterNamespaces(claim({ namespaces: ["*"] }), ["/x", "/y"])).toEqual(["/x", "/y"]);
  });
});

describe("isUnrestricted", () => {
  it("requires * in namespaces and open hostnames and envs", () => {
    expect(isUnrestricted(claim({ namespaces: ["*"] }))).toBe(true);
    expect(isUnrestricted(claim({ namespaces: ["*"], hostnames: ["*"], envs: ["*"] }))).toBe(true);
    expect(isUnrestricted(claim())).toBe(false);
    expect(isUnrestricted(claim({ namespaces: ["*"], hostnames: ["eu-1"] }))).toBe(false);
    expect(isUnrestricted(claim({ namespaces: ["*"], envs: ["prod"] }))).toBe(false);
  });
});

describe("parsePinboardClaim", () => {
  it("accepts the documented shape and drops unknown keys", () => {
    const parsed = parsePinboardClaim({ ...claim({ allowedPorts: [1, 65535], envs: ["e"] }), extra: 1 });
    expect(parsed).toEqual(claim({ allowedPorts: [1, 65535], envs: ["e"] }));
  });
  it("accepts a claim without allowedBackendHosts (an operator's), which allows no backend host", () => {
    const parsed = parsePinboardClaim({ namespaces: ["/threads"] });
    expect(parsed).toEqual({ namespaces: ["/threads"] });
    expect(checkBackend(parsed!, new URL("http://127.0.0.1:9000"))).toBe("backend host not allowed: 127.0.0.1");
  });
  it.each([
    ["missing", undefined],
    ["not an object", "x"],
    ["empty namespaces", { namespaces: [], allowedBackendHosts: ["*"] }],
    ["namespace without slash", { namespaces: ["threads"], allowedBackendHosts: ["*"] }],
    ["namespace with two segments", { namespaces: ["/a/b"], allowedBackendHosts: ["*"] }],
    ["port 0", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [0] }],
    ["port 65536", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [65536] }],
    ["fractional port", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [80.5] }],
    ["string port", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: ["80"] }],
    ["hostnames not an array", { namespaces: ["*"], allowedBackendHosts: ["*"], hostnames: "eu-1" }],
    ["empty env", { namespaces: ["*"], allowedBackendHosts: ["*"], envs: [""] }],
  ])("rejects %s", (_name, value) => {
    expect(parsePinboardClaim(value)).toBeNull();
  });
});
