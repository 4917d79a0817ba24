import { describe, expect, it } from "vitest";
import { PinboardError } from "../../src/errors/pinboard-error.ts";
import { applyFieldRules, MAX_REGISTER_INSTANCES, MIN_SECRET_LENGTH } from "../../src/registry/field-rules.ts";
import type { RegisterBody } from "../../src/registry/schemas.ts";

/**
 * Register's field rules as a function: each refusal is 400 with the contract's error string,
 * and an accepted body comes out normalised (field-rules.test.ts sends the same over HTTP).
 */

const body = (extra: Partial<RegisterBody> = {}): RegisterBody =>
  ({
    clientId: "c",
    secret: "s".repeat(16),
    namespaces: ["/a"],
    advertiseUrl: "http://127.0.0.1:9000",
    headroom: 10,
    draining: false,
    challenge: "x",
    challengeValue: "y",
    ...extra,
  }) as RegisterBody;

function refusalOf(fn: () => unknown): { status: number; error: unknown } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PinboardError);
    const e = err as PinboardError;
    return { status: e.status, error: (e.body as { error?: unknown }).error };
  }
  throw new Error("not refused");
}
const refused = (b: RegisterBody, aware: boolean) => refusalOf(() => applyFieldRules(b, aware));
const bad = (error: string) => ({ status: 400, error });

describe("register field rules", () => {
  it("defaults of single mode: no hostname, env *, wind_down, epoch 0, namespaces deduplicated", () => {
    expect(applyFieldRules(body({ namespaces: ["/a", "/b", "/a"] }), false)).toEqual({
      namespaces: ["/a", "/b"],
      advertiseUrl: "http://127.0.0.1:9000",
      hostname: "",
      env: "*",
      envs: {},
      takeover: "wind_down",
      bindingEpoch: 0,
      instances: [],
    });
  });

  it("a secret of at least 16 code points", () => {
    expect(MIN_SECRET_LENGTH).toBe(16);
    expect(() => applyFieldRules(body({ secret: "s".repeat(16) }), false)).not.toThrow();
    expect(refused(body({ secret: "s".repeat(15) }), false)).toEqual(bad("secret too short: at least 16 characters"));
    // 8 astral characters are 16 UTF-16 units but 8 code points.
    expect(refused(body({ secret: "😀".repeat(8) }), false)).toEqual(bad("secret too short: at least 16 characters"));
  });

  it("well-formed namespaces that shadow none of Pinboard's routes", () => {
    expect(refused(body({ namespaces: ["/a", "b"] }), false)).toEqual(bad("invalid namespace: b"));
    expect(refused(body({ namespaces: ["/registry"] }), false)).toEqual(bad("reserved namespace: /registry"));
  });

  it("an advertise URL over HTTP(S) with a host, no userinfo, query or fragment, trailing slashes dropped", () => {
    const url = (advertiseUrl: string) => applyFieldRules(body({ advertiseUrl }), false).advertiseUrl;
    expect(url("https://w.example:8443/base//")).toBe("https://w.example:8443/base");
    expect(url("http://w.example/")).toBe("http://w.example");
    expect(url("HTTP://W.example:80/p")).toBe("http://w.example/p");
    for (const advertiseUrl of [
      "not a url",
      "ftp://w.example",
      "file:///tmp/x",
      "http://user@w.example",
      "http://:pw@w.example",
      "http://w.example/?",
      "http://w.example/?a=1",
      "http://w.example/#",
      "http://w.example/#f",
    ])
      expect(refused(body({ advertiseUrl }), false)).toEqual(bad(`invalid advertiseUrl: ${advertiseUrl}`));
  });

  it("single mode refuses hostname-aware fields, even empty, and a nonzero epoch", () => {
    for (const field of ["hostname", "env", "envs", "takeover"] as const) {
      const value = field === "envs" ? {} : field === "takeover" ? "deny" : "";
      expect(refused(body({ [field]: value }), false)).toEqual(bad(`${field} requires hostname-aware mode`));
    }
    expect(refused(body({ epoch: 1 }), false)).toEqual(bad("epoch requires hostname-aware mode"));
    expect(applyFieldRules(body({ epoch: 0, hostname: null, env: null }), false).bindingEpoch).toBe(0);
  });

  it("hostname-aware mode requires a hostname, lowercases labels, env defaults to the hostname", () => {
    expect(refused(body(), true)).toEqual(bad("hostname is required in hostname-aware mode"));
    expect(refused(body({ hostname: "" }), true)).toEqual(bad("hostname is required in hostname-aware mode"));
    expect(
      applyFieldRules(body({ hostname: "App.Example", namespaces: ["/a", "/b"], epoch: 3, takeover: "deny" }), true),
    ).toEqual({
      namespaces: ["/a", "/b"],
      advertiseUrl: "http://127.0.0.1:9000",
      hostname: "app.example",
      env: "app.example",
      envs: {},
      takeover: "deny",
      bindingEpoch: 3,
      instances: [],
    });
    const fields = applyFieldRules(body({ hostname: "h", env: "Blue", envs: { "/a": "Green" } }), true);
    expect([fields.env, fields.envs]).toEqual(["blue", { "/a": "green" }]);
    expect(refused(body({ hostname: "a b" }), true)).toEqual(bad("invalid hostname: a b"));
    expect(refused(body({ hostname: "h", env: "A*" }), true)).toEqual(bad("invalid env: A*"));
    expect(refused(body({ hostname: "h", envs: { "/a": "x:y" } }), true)).toEqual(bad("invalid env: x:y"));
    expect(refused(body({ hostname: "h", envs: { "/b": "e" } }), true)).toEqual(bad("namespace not registered: /b"));
  });

  it("instances of registered namespaces, valid ids, each once, at most 100000 as sent", () => {
    expect(MAX_REGISTER_INSTANCES).toBe(100_000);
    expect(
      applyFieldRules(body({ namespaces: ["/a", "/b"], instances: { "/a": ["1", "2", "1"], "/b": ["1"] } }), false)
        .instances,
    ).toEqual([
      { ns: "/a", id: "1" },
      { ns: "/a", id: "2" },
      { ns: "/b", id: "1" },
    ]);
    expect(refused(body({ instances: { "/b": ["1"] } }), false)).toEqual(bad("namespace not registered: /b"));
    expect(refused(body({ instances: { "/a": ["ok", "no/slash"] } }), false)).toEqual(bad("invalid id: no/slash"));
    const ids = (n: number) => Array.from({ length: n }, (_, i) => String(i % 10));
    expect(() => applyFieldRules(body({ instances: { "/a": ids(100_000) } }), false)).not.toThrow();
    // Repeats count: 100001 ids sent, across namespaces.
    expect(
      refused(body({ namespaces: ["/a", "/b"], instances: { "/a": ids(50_000), "/b": ids(50_001) } }), false),
    ).toEqual(bad("too many instances: at most 100000 ids"));
  });
});
