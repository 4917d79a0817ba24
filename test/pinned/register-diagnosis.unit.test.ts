import { describe, expect, it } from "vitest";
import { PinboardCallError } from "../../src/pinned/pinboard-client.ts";
import {
  callFailure,
  failureFields,
  isProbeFailure,
  noAnswerHint,
  refusalHint,
} from "../../src/pinned/register-diagnosis.ts";

/**
 * What the worker library tells its operator about a failed call to Pinboard: Pinboard's own
 * words first, then the likely cause and the setting to change (register-diagnosis.test.ts runs
 * the same mistakes against a real Pinboard).
 */

const URL = "http://127.0.0.1:8787";
const SETTING = "the pinboardUrl option (PINBOARD_URL)";
const CREDENTIAL =
  "with the pinboard:worker scope and a pinboard claim naming the namespaces (npm start prints one as " +
  "PINBOARD_WORKER_TOKEN)";
const withCode = (code: string) =>
  Object.assign(new Error("fetch failed"), { cause: Object.assign(new Error(code), { code }) });

describe("noAnswerHint", () => {
  it("an unresolved host names the host of the setting and DNS", () => {
    const hint = `the host pinboard.invalid:8787 of ${SETTING} does not resolve: check its spelling and this machine's DNS`;
    expect(noAnswerHint(withCode("ENOTFOUND"), "http://pinboard.invalid:8787/x")).toBe(hint);
    expect(noAnswerHint(withCode("EAI_AGAIN"), "http://pinboard.invalid:8787/x")).toBe(hint);
    // A URL that does not parse is named as it is.
    expect(noAnswerHint(withCode("ENOTFOUND"), "nonsense")).toContain("the host nonsense of");
  });

  it("a timeout asks about load and firewalls", () => {
    const timeout = Object.assign(new Error("timed out after 5000 ms"), { name: "TimeoutError" });
    expect(noAnswerHint(timeout, URL)).toBe(
      `Pinboard at ${URL} did not answer in time: is it overloaded, or does a firewall drop the traffic?`,
    );
  });

  it("anything else asks whether Pinboard runs and the URL is right", () => {
    expect(noAnswerHint(withCode("ECONNREFUSED"), URL)).toBe(
      `cannot reach Pinboard at ${URL}: is Pinboard running, and is ${SETTING} right (host, port, http:// or https://)?`,
    );
  });
});

describe("refusalHint", () => {
  it("a 404 is a base path missed or extra, naming the URL's path", () => {
    const tail = `: set ${SETTING} to Pinboard's origin plus its PINBOARD_BASE_PATH if it sets one, e.g. http://127.0.0.1:8787/pinboard`;
    expect(refusalHint("register", 404, "not found", `${URL}/api/`)).toBe(
      `the Pinboard URL ${URL}/api/ probably misses or has an extra base path (it has the path /api)${tail}`,
    );
    expect(refusalHint("heartbeat", 404, "unknown namespace", `${URL}/`)).toBe(
      `the Pinboard URL ${URL}/ probably misses or has an extra base path (it has no path)${tail}`,
    );
    expect(refusalHint("register", 404, "", "nonsense")).toContain("(it has no path)");
    expect(refusalHint("register", 404, "", `${URL}/api//`)).toContain("(it has the path /api)");
  });

  it("a 3xx says calls never follow redirects; 299 and 400 are no redirect", () => {
    const hint = `${URL} answers a redirect, which worker calls never follow: set ${SETTING} to the URL it redirects to (https:// instead of http://?)`;
    expect(refusalHint("register", 300, "", URL)).toBe(hint);
    expect(refusalHint("register", 308, "", URL)).toBe(hint);
    expect(refusalHint("register", 399, "", URL)).toBe(hint);
    expect(refusalHint("register", 299, "", URL)).toBeNull();
    expect(refusalHint("register", 400, "", URL)).toBeNull();
  });

  it("a 401 names the keys the credential must be signed with and how to get a fresh one", () => {
    expect(refusalHint("heartbeat", 401, "unauthorized", URL)).toBe(
      "Pinboard does not accept the credential: it is malformed, expired, or signed with another key than " +
        "Pinboard's (PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS), or names another issuer or audience; " +
        `pass a fresh credential ${CREDENTIAL}; a credential function can renew it before it expires`,
    );
  });

  it("register's 403 names the claim field that refused it, or the scope", () => {
    for (const [error, claim] of [
      ["namespace not allowed: a", "namespaces"],
      ["backend host not allowed: h", "allowedBackendHosts"],
      ["advertiseUrl port not allowed: 1", "allowedPorts"],
      ["hostname not allowed: h", "hostnames"],
      ["env not allowed: e", "envs"],
    ]) {
      expect(refusalHint("register", 403, error!, URL)).toBe(
        `the credential's pinboard claim does not allow it (its ${claim}): register only what the claim allows, ` +
          `or get a credential whose ${claim} cover it`,
      );
    }
    expect(refusalHint("register", 403, "forbidden", URL)).toBe(
      "the credential lacks the pinboard:worker scope every worker route (/registry/register, heartbeat, …) needs " +
        `(an operator credential has pinboard:operator), or its pinboard claim is malformed: pass a credential ${CREDENTIAL}`,
    );
  });

  it("a session route's 403 forbidden is another account or claims; other 403s say it all", () => {
    expect(refusalHint("heartbeat", 403, "forbidden", URL)).toBe(
      "the credential's account differs from the one that registered this session, its claims no longer cover " +
        "the registration, or it lacks the pinboard:worker scope: keep a credential of the same account and claims",
    );
    expect(refusalHint("heartbeat", 403, "namespace not allowed: a", URL)).toBeNull();
  });

  it("409 client of another account and 503 not serving, by their exact errors", () => {
    expect(refusalHint("register", 409, "client belongs to another account", URL)).toBe(
      "another account registered this clientId: pick another with the clientId option (CLIENT_ID), or use that account's credential (after a change of Pinboard's PINBOARD_SECRETS_KEY or passport secret it clears within two leases)",
    );
    expect(refusalHint("register", 409, "unknown session", URL)).toBeNull();
    expect(refusalHint("register", 503, "not the serving fleet", URL)).toBe(
      "this Pinboard node is not serving (another fleet holds the license, or it is starting): retried until it serves",
    );
    expect(refusalHint("register", 503, "client belongs to another account", URL)).toBeNull();
    expect(refusalHint("register", 409, "not the serving fleet", URL)).toBeNull();
    expect(refusalHint("register", 500, "internal error", URL)).toBeNull();
    // A 400's hints belong to 400 only.
    expect(refusalHint("register", 500, "invalid json", URL)).toBeNull();
    expect(refusalHint("register", 409, "hostname is required in hostname-aware mode", URL)).toBeNull();
  });

  it("a 400 of single mode, of hostname-aware mode, or of a body Pinboard cannot read", () => {
    const single =
      "Pinboard runs in single mode (PINBOARD_HOSTNAME_AWARE off): drop the hostname, env, envs, takeover " +
      "and bindingEpoch options, or turn hostname-aware mode on";
    expect(refusalHint("register", 400, "hostname requires hostname-aware mode", URL)).toBe(single);
    expect(refusalHint("register", 400, "epoch requires hostname-aware mode", URL)).toBe(single);
    expect(refusalHint("register", 400, "requires hostname-aware mode: no", URL)).toBeNull();
    expect(refusalHint("register", 400, "hostname is required in hostname-aware mode", URL)).toBe(
      "Pinboard runs in hostname-aware mode (PINBOARD_HOSTNAME_AWARE): set the hostname option",
    );
    const body = "Pinboard does not understand the body: does this worker library's version match Pinboard's?";
    expect(refusalHint("register", 400, "expected { namespaces: string[] }", URL)).toBe(body);
    expect(refusalHint("register", 400, "invalid json", URL)).toBe(body);
    expect(refusalHint("register", 400, "not expected {", URL)).toBeNull();
    expect(refusalHint("register", 400, "invalid id: x", URL)).toBeNull();
  });
});

describe("callFailure", () => {
  const call = { route: "register", url: `${URL}/registry/register`, pinboardUrl: URL };

  it("no answer: the network error, then the hint for it", () => {
    const error = callFailure(call, null, withCode("ECONNREFUSED"));
    expect(error).toBeInstanceOf(PinboardCallError);
    expect(error.status).toBeNull();
    expect(error.message).toBe(
      `register: no answer from ${URL}/registry/register (ECONNREFUSED) — ${noAnswerHint(withCode("ECONNREFUSED"), URL)}`,
    );
    expect(callFailure(call, null, withCode("ECONNREFUSED"), "my hint").hint).toBe("my hint");
  });

  it("an answer: Pinboard's status and error as sent, then the hint, or the caller's own", () => {
    const error = callFailure(call, { status: 401, body: { error: "unauthorized" } });
    expect(error.status).toBe(401);
    expect(error.message).toBe(
      `register: 401 unauthorized from ${URL}/registry/register — ${refusalHint("register", 401, "", URL)}`,
    );
    expect(callFailure(call, { status: 401, body: {} }, undefined, "mine").hint).toBe("mine");
    // The error string a hint is judged on is Pinboard's, and only when it is a string.
    expect(callFailure(call, { status: 400, body: { error: "invalid json" } }).hint).toBe(
      refusalHint("register", 400, "invalid json", URL),
    );
    expect(callFailure(call, { status: 400, body: { error: ["invalid json"] } }).hint).toBeUndefined();
    expect(callFailure(call, { status: 500, body: { error: "x" } }).message).toBe(
      `register: 500 x from ${URL}/registry/register`,
    );
  });
});

describe("isProbeFailure and failureFields", () => {
  it("the probe failure is register's 400 with exactly that error", () => {
    expect(isProbeFailure({ status: 400, body: { error: "registration probe failed" } })).toBe(true);
    expect(isProbeFailure({ status: 409, body: { error: "registration probe failed" } })).toBe(false);
    expect(isProbeFailure({ status: 400, body: { error: "invalid json" } })).toBe(false);
  });

  it("the failure's message comes last as `error`", () => {
    expect(failureFields({ attempt: 2 }, new Error("boom"))).toEqual({ attempt: 2, error: "boom" });
    expect(failureFields({}, "plain")).toEqual({ error: "plain" });
  });
});
