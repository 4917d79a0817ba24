import { describe, expect, it } from "vitest";
import { mintCredential } from "../../src/auth/mint.ts";
import { createPassport } from "../../src/auth/passport.ts";
import { parseConfig } from "../../src/config/config.ts";
import type { DataPath } from "../../src/data-plane/data-path.ts";
import { NO_BODY } from "../../src/data-plane/framing.ts";
import { inboundOfRequest } from "../../src/data-plane/inbound.ts";
import { type ForwardPlan, planForward } from "../../src/data-plane/plan.ts";
import type { AppDeps } from "../../src/deps/app-deps.ts";
import { answerOf, PinboardError } from "../../src/errors/pinboard-error.ts";
import { type AffinityKey, clientIpAffinity } from "../../src/placement/affinity.ts";
import { Refusal } from "../../src/placement/refusal.ts";

/**
 * What planForward decides before the first resolve, on the paths that need no Redis: the
 * serving check, the caller headers refused before their session is read, the data-plane
 * passport, the Host header in hostname-aware mode, and the affinity preference, in the
 * protocol's order. The deps hold only what these paths read (config, passport, fleet standing,
 * the resolution counter); no Redis is given, so a path that reached for it would fail. The
 * caller's session and the hostname binding, which are read from Redis, are
 * test/data-plane/caller.test.ts and test/data-plane/hostname-aware.test.ts.
 */

const SECRET = "plan-secret-plan-secret-plan-0001";
const NOW_S = 1_700_000_000;
const PATH: DataPath = { ns: "/threads", id: "abc", rest: "/x" };

interface Setup {
  env?: Record<string, string>;
  /** This node's standing: serving, or not (then assertServing settles it). */
  serving?: boolean;
  assertServing?: () => Promise<void>;
}

interface PlanOptions {
  peer?: string;
  path?: DataPath;
  key?: AffinityKey;
  /** The request's authority: "" when the client sent no Host. */
  host?: string;
}

function setup({ env = {}, serving = true, assertServing = async () => {} }: Setup = {}) {
  const resolutions: string[] = [];
  const deps = {
    config: parseConfig({ PINBOARD_PASSPORT_SECRET: SECRET, ...env }),
    passport: createPassport({ secret: SECRET }, { now: () => (NOW_S + 60) * 1000 }),
    fleet: { servingNow: () => serving, assertServing },
    metrics: { resolution: (outcome: string) => void resolutions.push(outcome) },
  } as unknown as AppDeps;
  const plan = (headers: Record<string, string> = {}, options: PlanOptions = {}): Promise<ForwardPlan> => {
    const { peer = "203.0.113.9", path = PATH, key = clientIpAffinity, host = "pinboard.example" } = options;
    const request = inboundOfRequest(
      new Request(`http://pinboard.example${path.ns}/${path.id}${path.rest}`, { headers }),
      peer,
    );
    return planForward(deps, { ...request, host, framing: NO_BODY }, path, key);
  };
  return { plan, resolutions };
}

/** The answer a refused plan renders as. */
async function refusal(planning: Promise<ForwardPlan>) {
  const err = await planning.then(
    () => expect.unreachable("the plan was not refused"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PinboardError);
  const { status, headers, body } = answerOf(err as PinboardError);
  return { status, headers, body };
}

const json = (status: number, error: string, headers: Record<string, string> = {}) => ({
  status,
  headers: { ...headers, "content-type": "application/json" },
  body: JSON.stringify({ error }),
});

describe("planForward: the plan of an ordinary request", () => {
  it("single mode, no caller, no rule: the one binding, and the client address as the affinity key", async () => {
    const { plan, resolutions } = setup();
    expect(await plan()).toEqual({
      path: PATH,
      peer: "203.0.113.9",
      trustedPeer: false,
      resolve: { ns: "/threads", id: "abc", env: "*", hostname: "", takeover: "", affinityHash: 0x1f1856e7 },
    });
    expect(resolutions).toEqual([]);
  });

  it("believes X-Forwarded-For only from a trusted proxy, and says the peer is trusted", async () => {
    const { plan } = setup({ env: { PINBOARD_TRUSTED_PROXIES: "10.0.0.1,10.0.0.2" } });
    const viaProxy = await plan({ "x-forwarded-for": "203.0.113.9, 10.0.0.2" }, { peer: "10.0.0.1" });
    expect({ trustedPeer: viaProxy.trustedPeer, affinityHash: viaProxy.resolve.affinityHash }).toEqual({
      trustedPeer: true,
      affinityHash: 0x1f1856e7,
    });
    const direct = await plan({ "x-forwarded-for": "203.0.113.9" }, { peer: "10.0.0.7" });
    expect({ trustedPeer: direct.trustedPeer, affinityHash: direct.resolve.affinityHash }).toEqual({
      trustedPeer: false,
      affinityHash: 0xdd7bf880,
    });
  });

  it("hashes the app's own affinity key, and asks for no preference when the key is null", async () => {
    const { plan } = setup();
    const seen: unknown[] = [];
    const tenant: AffinityKey = (request, client) => {
      seen.push({ pathname: request.pathname, host: request.host, client });
      return request.headers.get("x-tenant");
    };
    expect((await plan({ "x-tenant": "tenant:acme" }, { key: tenant })).resolve.affinityHash).toBe(0xb6786d2f);
    expect(seen).toEqual([
      { pathname: "/threads/abc/x", host: "pinboard.example", client: { peer: "203.0.113.9", address: "203.0.113.9" } },
    ]);
    const none = await plan({}, { key: tenant });
    expect(none.resolve).toEqual({ ns: "/threads", id: "abc", env: "*", hostname: "", takeover: "" });
  });
});

describe("planForward: the serving check comes first", () => {
  it("a node that is not serving refuses 503 not the serving fleet, counted as a resolution", async () => {
    const { plan, resolutions } = setup({
      serving: false,
      assertServing: () => Promise.reject(PinboardError.refusal("not the serving fleet")),
    });
    const planning = plan({ "pinboard-from": "/threads/caller" });
    await expect(planning).rejects.toBeInstanceOf(Refusal);
    expect(await refusal(planning)).toEqual(json(503, "not the serving fleet", { "retry-after": "1" }));
    expect(resolutions).toEqual(["not-serving"]);
  });

  it("a node whose standing is confirmed on asking goes on", async () => {
    let asked = 0;
    const { plan, resolutions } = setup({ serving: false, assertServing: async () => void asked++ });
    expect((await plan()).resolve.id).toBe("abc");
    expect({ asked, resolutions }).toEqual({ asked: 1, resolutions: [] });
  });

  it("an error other than the fleet's refusal passes as it is, uncounted", async () => {
    const outage = new Error("redis unavailable");
    const { plan, resolutions } = setup({ serving: false, assertServing: () => Promise.reject(outage) });
    await expect(plan()).rejects.toBe(outage);
    expect(resolutions).toEqual([]);
  });
});

describe("planForward: caller headers refused before their session is read", () => {
  it("403 caller attestation requires session credentials, when any caller header comes without them", async () => {
    const { plan, resolutions } = setup();
    const expected = json(403, "caller attestation requires session credentials");
    expect(await refusal(plan({ "pinboard-from": "/threads/caller" }))).toEqual(expected);
    expect(await refusal(plan({ "pinboard-session": "s1" }))).toEqual(expected);
    expect(await refusal(plan({ "pinboard-session-secret": "x" }))).toEqual(expected);
    expect(await refusal(plan({ "pinboard-subrequest-depth": "1" }))).toEqual(expected);
    expect(resolutions).toEqual([]);
  });

  it("403 malformed subrequest depth, and 508 past a depth of 50", async () => {
    const { plan } = setup();
    const session = { "pinboard-from": "/threads/caller", "pinboard-session": "s1", "pinboard-session-secret": "x" };
    for (const depth of ["x", "-1", "1.5", "1234567890", ""]) {
      expect(await refusal(plan({ ...session, "pinboard-subrequest-depth": depth }))).toEqual(
        json(403, "malformed subrequest depth"),
      );
    }
    expect(await refusal(plan({ ...session, "pinboard-subrequest-depth": "51" }))).toEqual(
      json(508, "subrequest depth exceeded"),
    );
  });
});

describe("planForward: the data-plane passport (PINBOARD_DATA_PLANE_RULES)", () => {
  const rules = { PINBOARD_DATA_PLANE_RULES: JSON.stringify({ "/threads": { scopes: ["threads:write"] } }) };
  const credential = (scopes: string[], namespaces = ["*"]) =>
    mintCredential({ secret: SECRET, sub: "client-1", scopes, pinboard: { namespaces }, nowSeconds: NOW_S });

  it("401 authentication required without a credential, 401 invalid credential for a bad one", async () => {
    const { plan, resolutions } = setup({ env: rules });
    expect(await refusal(plan())).toEqual(json(401, "authentication required"));
    expect(await refusal(plan({ authorization: "Bearer not-a-jwt" }))).toEqual(json(401, "invalid credential"));
    expect(resolutions).toEqual([]);
  });

  it("403 when the credential's pinboard claim or its scopes do not cover the rule", async () => {
    const { plan } = setup({ env: rules });
    const otherNs = await credential(["threads:write"], ["/docs"]);
    expect(await refusal(plan({ authorization: `Bearer ${otherNs}` }))).toEqual(json(403, "namespace not allowed"));
    const noScope = await credential(["threads:read"]);
    expect(await refusal(plan({ authorization: `Bearer ${noScope}` }))).toEqual(json(403, "insufficient scope"));
  });

  it("a valid credential rides along as acct: sub, scopes without pinboard:*, claims without scopes and pinboard", async () => {
    const { plan } = setup({ env: rules });
    const token = await credential(["threads:write", "pinboard:worker"]);
    expect((await plan({ authorization: `Bearer ${token}` })).acct).toEqual({
      sub: "client-1",
      scopes: ["threads:write"],
      claims: { sub: "client-1", iat: NOW_S, exp: NOW_S + 3600 },
    });
  });

  it("a namespace without a rule passes untouched, with no acct", async () => {
    const { plan } = setup({ env: rules });
    const path = { ns: "/docs", id: "d1", rest: "" };
    expect(await plan({}, { path })).toEqual({
      path,
      peer: "203.0.113.9",
      trustedPeer: false,
      resolve: { ns: "/docs", id: "d1", env: "*", hostname: "", takeover: "", affinityHash: 0x1f1856e7 },
    });
  });
});

describe("planForward: hostname-aware mode", () => {
  it("400 missing Host header, before any binding lookup", async () => {
    const { plan, resolutions } = setup({ env: { PINBOARD_HOSTNAME_AWARE: "true" } });
    expect(await refusal(plan({}, { host: "" }))).toEqual(json(400, "missing Host header"));
    expect(await refusal(plan({}, { host: ":8787" }))).toEqual(json(400, "missing Host header"));
    expect(resolutions).toEqual([]);
  });
});
