import { describe, expect, it } from "vitest";
import { VIA_HEADER, viaOf } from "../../src/audit/via.ts";
import { workerTarget } from "../../src/audit/worker-target.ts";

describe("the Pinboard-Via header", () => {
  it("is named Pinboard-Via", () => {
    expect(VIA_HEADER).toBe("Pinboard-Via");
  });

  it("records console or cli when the request says so, in any case and with spaces", () => {
    expect(viaOf("console")).toBe("console");
    expect(viaOf("cli")).toBe("cli");
    expect(viaOf(" CLI ")).toBe("cli");
    expect(viaOf("Console")).toBe("console");
  });

  it("records api for no header, an empty one and any other value: a request cannot claim an event's via", () => {
    for (const value of [undefined, "", "api", "sweeper", "registry", "data-plane", "console,cli", "consolex"]) {
      expect(viaOf(value), String(value)).toBe("api");
    }
  });
});

describe("an audit entry's worker target", () => {
  const record = {
    sessionId: "s1",
    clientId: "c1",
    namespaces: ["/a", "/b"],
    hostname: "",
    env: "*",
    envs: {},
  };

  it("in single mode names the session, the client and the namespaces, no hostname, no envs", () => {
    expect(workerTarget(record)).toEqual({ sessionId: "s1", clientId: "c1", namespaces: ["/a", "/b"] });
  });

  it("in hostname-aware mode names the hostname and each namespace's env (its own, else the default)", () => {
    expect(workerTarget({ ...record, hostname: "h.example", env: "prod", envs: { "/b": "canary" } })).toEqual({
      sessionId: "s1",
      clientId: "c1",
      namespaces: ["/a", "/b"],
      hostname: "h.example",
      envs: { "/a": "prod", "/b": "canary" },
    });
  });
});
