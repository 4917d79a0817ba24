import { describe, expect, it } from "vitest";
import { isRegistered, registerBody } from "../../src/pinned/register-request.ts";

/**
 * The register body the worker sends (the protocol's field names, optional fields only when set,
 * a re-register's reclaim) and the answer that names a new session.
 */

const fields = { clientId: "c", secret: "s".repeat(16), namespaces: ["/a"], advertiseUrl: () => "unused" };
const moment = {
  pair: { challenge: "ch", challengeValue: "val" },
  advertiseUrl: "http://10.0.0.7:9001",
  headroom: 5,
  draining: false,
};

describe("registerBody", () => {
  it("carries the required fields, the moment's advertise URL and challenge, and nothing unset", () => {
    expect(registerBody(fields, moment)).toEqual({
      clientId: "c",
      secret: "s".repeat(16),
      namespaces: ["/a"],
      advertiseUrl: "http://10.0.0.7:9001",
      headroom: 5,
      draining: false,
      challenge: "ch",
      challengeValue: "val",
    });
    expect(Object.keys(registerBody(fields, moment))).toHaveLength(8);
  });

  it('names the hostname-aware fields as the protocol does (bindingEpoch is `epoch`), 0 and "" included', () => {
    const body = registerBody(
      { ...fields, hostname: "", env: "blue", envs: { "/a": "green" }, takeover: "deny", bindingEpoch: 0 },
      { ...moment, draining: true },
    );
    expect(body).toMatchObject({ hostname: "", env: "blue", envs: { "/a": "green" }, takeover: "deny", epoch: 0 });
    expect(body.draining).toBe(true);
    expect("bindingEpoch" in body).toBe(false);
  });

  it("a re-register names the session it reclaims from and the instances still resident", () => {
    const reclaim = { prevSessionId: "old", instances: { "/a": ["1", "2"] } };
    expect(registerBody(fields, { ...moment, reclaim })).toMatchObject(reclaim);
  });
});

describe("isRegistered", () => {
  it("is a 200 whose body names the sessionId as a string", () => {
    expect(isRegistered({ status: 200, body: { sessionId: "s" } })).toBe(true);
    expect(isRegistered({ status: 201, body: { sessionId: "s" } })).toBe(false);
    expect(isRegistered({ status: 200, body: { sessionId: 1 } })).toBe(false);
    expect(isRegistered({ status: 200, body: {} })).toBe(false);
  });
});
