import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { TEST_PASSPORT_SECRET } from "../support/pinboard-app.ts";
import { putRow } from "../support/rows.ts";

/**
 * Caller attestation (an instance calling another through Pinboard) and the data-plane passport,
 * on the Node entry with worker-library workers. /echo has a passport rule (scope echo:use);
 * /peer and /other have none.
 *
 *   caller  serves /echo and /peer: the calling instance lives on it
 *   peer    serves /echo
 *   outside serves /other only
 */

let fleet: Fleet, caller: FleetWorker, peer: FleetWorker, outside: FleetWorker;
const FROM = "/peer/caller-1";

beforeAll(async () => {
  fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_DATA_PLANE_RULES: JSON.stringify({ "/echo": { scopes: ["echo:use"] } }) },
  });
  caller = await fleet.addWorker({ namespaces: { "/echo": Echo, "/peer": Echo } });
  peer = await fleet.addWorker({ namespaces: { "/echo": Echo } });
  outside = await fleet.addWorker({ namespaces: { "/other": Echo } });
  await fleet.skipColdStart();
  // The calling instance's placement (no passport rule on /peer).
  const placed = await fetch(`${fleet.pb.url}${FROM}`);
  expect(placed.status).toBe(200);
});
afterAll(() => fleet?.close());

const url = (path: string) => `${fleet.pb.url}${path}`;
const callerHeaders = (extra: Record<string, string> = {}): Record<string, string> => ({
  "pinboard-from": FROM,
  "pinboard-session": caller.worker.sessionId!,
  "pinboard-session-secret": caller.worker.secret,
  ...extra,
});

async function expectError(res: Response, status: number, error: string): Promise<void> {
  expect(res.status).toBe(status);
  expect(res.headers.get("content-type")).toMatch(/^application\/json/);
  expect(await res.json()).toEqual({ error });
}

interface Echoed {
  attestation: {
    aud: string;
    caller?: string;
    depth?: number;
    acct?: { sub: string; scopes?: string[]; claims: Record<string, unknown> };
  };
  headers: Record<string, string>;
}

describe("caller attestation", () => {
  it("a verified caller reaches another id; the target sees caller and depth; passport is bypassed", async () => {
    const res = await fetch(url("/echo/target-1"), { headers: callerHeaders() });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Echoed;
    expect(body.attestation).toMatchObject({ caller: FROM, depth: 1 });
    expect(body.attestation.acct).toBeUndefined();
    // Inbound caller headers never reach the worker.
    for (const name of ["pinboard-from", "pinboard-session", "pinboard-session-secret", "pinboard-subrequest-depth"]) {
      expect(body.headers[name]).toBeUndefined();
    }

    const deeper = (await (
      await fetch(url("/echo/target-2"), { headers: callerHeaders({ "pinboard-subrequest-depth": "50" }) })
    ).json()) as Echoed;
    expect(deeper.attestation).toMatchObject({ caller: FROM, depth: 50 });
  });

  it("a new placement for a caller prefers the caller's own session over the client-address affinity", async () => {
    // Which /echo worker does this client's address prefer? The caller will be the other one.
    const auth = {
      authorization: `Bearer ${await new SignJWT({ scopes: ["echo:use"] }).setProtectedHeader({ alg: "HS256" }).setSubject("probe").sign(new TextEncoder().encode(TEST_PASSPORT_SECRET))}`,
    };
    const probe = (await (await fetch(url("/echo/affinity-probe"), { headers: auth })).json()) as Echoed;
    const preferred = probe.attestation.aud;
    const calling = [caller, peer].find((w) => w.worker.sessionId !== preferred)!;
    await putRow(fleet.t, "/echo", "calling-1", { sessionId: calling.worker.sessionId!, epoch: "1000" });
    const headers = {
      "pinboard-from": "/echo/calling-1",
      "pinboard-session": calling.worker.sessionId!,
      "pinboard-session-secret": calling.worker.secret,
    };
    for (let i = 0; i < 5; i++) {
      const res = await fetch(url(`/echo/callee-${i}`), { headers });
      expect(res.status).toBe(200);
      expect(((await res.json()) as Echoed).attestation).toMatchObject({
        aud: calling.worker.sessionId,
        caller: "/echo/calling-1",
      });
      // Without the caller, the same client lands on its address's preference.
      const plain = await fetch(url(`/echo/plain-${i}`), { headers: auth });
      expect(((await plain.json()) as Echoed).attestation.aud).toBe(preferred);
    }
  });

  it("403 caller attestation requires session credentials", async () => {
    for (const headers of <Array<Record<string, string>>>[
      { "pinboard-from": FROM },
      { "pinboard-from": FROM, "pinboard-session": caller.worker.sessionId! },
      { "pinboard-from": FROM, "pinboard-session-secret": caller.worker.secret },
      { "pinboard-subrequest-depth": "2" },
    ]) {
      await expectError(
        await fetch(url("/echo/t"), { headers }),
        403,
        "caller attestation requires session credentials",
      );
    }
  });

  it("403 unknown session", async () => {
    await expectError(
      await fetch(url("/echo/t"), {
        headers: callerHeaders({ "pinboard-session": "ffffffffffffffffffffffffffffffff" }),
      }),
      403,
      "unknown session",
    );
  });

  it("403 invalid session secret", async () => {
    await expectError(
      await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-session-secret": "not-the-secret" }) }),
      403,
      "invalid session secret",
    );
    // Another worker's secret is no better.
    await expectError(
      await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-session-secret": peer.worker.secret }) }),
      403,
      "invalid session secret",
    );
  });

  it("403 malformed caller claim", async () => {
    const withoutFrom = callerHeaders();
    delete withoutFrom["pinboard-from"];
    await expectError(await fetch(url("/echo/t"), { headers: withoutFrom }), 403, "malformed caller claim");
    for (const from of ["caller-1", "/peer/", "peer/caller-1", "/peer/bad*id", "/a/b/c", `/peer/${"x".repeat(257)}`]) {
      await expectError(
        await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-from": from }) }),
        403,
        "malformed caller claim",
      );
    }
  });

  it("403 caller placement mismatch", async () => {
    // No placement for that id …
    await expectError(
      await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-from": "/peer/never-placed" }) }),
      403,
      "caller placement mismatch",
    );
    // … a placement owned by another session …
    await putRow(fleet.t, "/peer", "someone-elses", { sessionId: peer.worker.sessionId!, epoch: "1000" });
    await expectError(
      await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-from": "/peer/someone-elses" }) }),
      403,
      "caller placement mismatch",
    );
    // … or a namespace the session never registered.
    await putRow(fleet.t, "/other", "mine", { sessionId: caller.worker.sessionId!, epoch: "1000" });
    await expectError(
      await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-from": "/other/mine" }) }),
      403,
      "caller placement mismatch",
    );
  });

  it("403 malformed subrequest depth", async () => {
    for (const depth of ["abc", "-1", "1.5", "1234567890", ""]) {
      await expectError(
        await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-subrequest-depth": depth }) }),
        403,
        "malformed subrequest depth",
      );
    }
  });

  it("508 subrequest depth exceeded past 50", async () => {
    for (const depth of ["51", "999999999"]) {
      await expectError(
        await fetch(url("/echo/t"), { headers: callerHeaders({ "pinboard-subrequest-depth": depth }) }),
        508,
        "subrequest depth exceeded",
      );
    }
  });

  it("reaches a namespace it does not serve: single mode has one hostname and one env", async () => {
    // The contract's scope is the caller's hostname and env, not its namespaces
    // (hostname-aware refusals: data-plane-hostname-aware.test.ts).
    const res = await fetch(url("/other/t"), { headers: callerHeaders() });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Echoed;
    expect(body.attestation).toMatchObject({ aud: outside.worker.sessionId, caller: FROM, depth: 1 });
  });
});

describe("data-plane passport (PINBOARD_DATA_PLANE_RULES)", () => {
  const token = (claims: Record<string, unknown>, secret = TEST_PASSPORT_SECRET) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject("user-1")
      .setIssuedAt()
      .setExpirationTime("10m")
      .sign(new TextEncoder().encode(secret));
  const bearer = async (claims: Record<string, unknown>, secret?: string) => ({
    authorization: `Bearer ${await token(claims, secret)}`,
  });

  it("401 authentication required without a credential", async () => {
    await expectError(await fetch(url("/echo/pp")), 401, "authentication required");
  });

  it("401 invalid credential", async () => {
    for (const authorization of [
      "Bearer not-a-jwt",
      "Basic dXNlcjpwYXNz",
      `Bearer ${await token({ scopes: ["echo:use"] }, "another-secret-0123456789abcdef-xyz")}`,
    ]) {
      await expectError(await fetch(url("/echo/pp"), { headers: { authorization } }), 401, "invalid credential");
    }
    const expired = await new SignJWT({ scopes: ["echo:use"] })
      .setProtectedHeader({ alg: "HS256" })
      .setSubject("user-1")
      .setIssuedAt(Math.floor(Date.now() / 1000) - 7200)
      .setExpirationTime(Math.floor(Date.now() / 1000) - 3600)
      .sign(new TextEncoder().encode(TEST_PASSPORT_SECRET));
    await expectError(
      await fetch(url("/echo/pp"), { headers: { authorization: `Bearer ${expired}` } }),
      401,
      "invalid credential",
    );
  });

  it("403 namespace not allowed when the credential's pinboard claim does not cover the namespace", async () => {
    const headers = await bearer({ scopes: ["echo:use"], pinboard: { namespaces: ["/other"] } });
    await expectError(await fetch(url("/echo/pp"), { headers }), 403, "namespace not allowed");
  });

  it("403 insufficient scope without one of the rule's scopes", async () => {
    await expectError(
      await fetch(url("/echo/pp"), { headers: await bearer({ scopes: ["other:use", "pinboard:worker"] }) }),
      403,
      "insufficient scope",
    );
    await expectError(await fetch(url("/echo/pp"), { headers: await bearer({}) }), 403, "insufficient scope");
  });

  it("a valid credential passes and rides along as acct: sub, scopes without pinboard:*, claims without pinboard", async () => {
    const headers = await bearer({
      scopes: ["echo:use", "pinboard:worker", "reports:read"],
      pinboard: { namespaces: ["/echo"], allowedBackendHosts: ["*"] },
      tenant: "t-1",
    });
    const res = await fetch(url("/echo/pp"), { headers });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Echoed;
    const acct = body.attestation.acct!;
    expect(acct.sub).toBe("user-1");
    expect(acct.scopes).toEqual(["echo:use", "reports:read"]);
    expect(acct.claims.tenant).toBe("t-1");
    expect(acct.claims.sub).toBe("user-1");
    expect(acct.claims).not.toHaveProperty("pinboard");
    expect(JSON.stringify(acct)).not.toContain("pinboard:");
    expect(body.attestation.caller).toBeUndefined();
    // The credential itself is forwarded as sent (Authorization is not a Pinboard-* header).
    expect(body.headers.authorization).toBe(headers.authorization);

    // A space-separated scope claim counts as well.
    const spaced = await fetch(url("/echo/pp"), { headers: await bearer({ scope: "pinboard:operator echo:use" }) });
    expect(spaced.status).toBe(200);
    expect(((await spaced.json()) as Echoed).attestation.acct).toMatchObject({ sub: "user-1", scopes: ["echo:use"] });
  });

  it("namespaces without a rule pass untouched, with no acct", async () => {
    const res = await fetch(url("/peer/open"));
    expect(res.status).toBe(200);
    expect(((await res.json()) as Echoed).attestation.acct).toBeUndefined();
  });
});
