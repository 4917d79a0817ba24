import { SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { mintCredential } from "../../src/auth/mint.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));
beforeAll(async () => {
  await registerOk(pb, token, registerBody(worker));
});

/** Signs any payload with the test key (mintCredential refuses malformed claims). */
const signRaw = (payload: Record<string, unknown>) =>
  new SignJWT(payload)
    .setProtectedHeader({ alg: "HS256" })
    .setIssuedAt()
    .setExpirationTime("1h")
    .sign(new TextEncoder().encode(TEST_PASSPORT_SECRET));

/** Runs a request and checks that it changed nothing in Redis. */
async function unchanged(request: () => Promise<Response>): Promise<Response> {
  const before = await t.snapshot();
  const res = await request();
  expect(await t.snapshot()).toEqual(before);
  return res;
}

const workerRoutes = [
  "/registry/register",
  "/registry/heartbeat",
  "/registry/release",
  "/registry/tag",
  "/registry/deregister",
];

describe("Passport on /registry/*", () => {
  for (const path of [...workerRoutes, "/registry/nope"]) {
    it(`${path}: 401 without a credential, with garbage, with a wrong key`, async () => {
      const wrongKey = await mintCredential({
        secret: "another-secret-another-secret-0123456789",
        sub: "x",
        scopes: ["pinboard:worker"],
        pinboard: { namespaces: ["*"], allowedBackendHosts: ["*"] },
      });
      for (const auth of [undefined, "Bearer", "Bearer garbage", "Basic abc", `Bearer ${wrongKey}`]) {
        const res = await unchanged(() =>
          pb.call("POST", path, { body: {}, headers: auth ? { authorization: auth } : {} }),
        );
        expect(res.status).toBe(401);
        expect(await res.json()).toEqual({ error: "unauthorized" });
      }
    });

    it(`${path}: 403 forbidden with the operator scope or a malformed pinboard claim`, async () => {
      const operator = await credential("pinboard:operator");
      let res = await unchanged(() => pb.call("POST", path, { token: operator, body: {} }));
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: "forbidden" });
      for (const pinboard of [
        undefined,
        { namespaces: [], allowedBackendHosts: ["*"] },
        { namespaces: "*", allowedBackendHosts: ["*"] },
        { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [0] },
      ]) {
        const malformed = await signRaw({
          sub: "x",
          scopes: ["pinboard:worker", "pinboard:operator"],
          ...(pinboard && { pinboard }),
        });
        res = await unchanged(() => pb.call("POST", path, { token: malformed, body: {} }));
        expect(res.status).toBe(403);
        expect(await res.json()).toEqual({ error: "forbidden" });
      }
    });
  }

  it("an unknown /registry/* path authenticates, then answers 404 not found", async () => {
    for (const method of ["GET", "POST", "DELETE"]) {
      const res = await pb.call(method, "/registry/unknown/deeper", { token });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ error: "not found" });
    }
  });
});

describe("bodies", () => {
  it("400 invalid json, changing nothing", async () => {
    for (const path of workerRoutes) {
      const res = await unchanged(() =>
        pb.call("POST", path, { token, raw: "{not json", headers: { "content-type": "application/json" } }),
      );
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "invalid json" });
    }
  });

  it("400 expected {...} for a body failing the schema", async () => {
    const cases: Array<[string, unknown, string]> = [
      [
        "/registry/heartbeat",
        { sessionId: "s" },
        "expected {sessionId: string, headroom: number, draining: boolean, challenge: string, challengeValue: string, acks?: (string | integer)[]}",
      ],
      ["/registry/release", [], 'expected {sessionId: string, namespace: string, id: string, epoch?: "digits" | ""}[]'],
      [
        "/registry/release",
        { sessionId: "s" },
        'expected {sessionId: string, namespace: string, id: string, epoch?: "digits" | ""}[]',
      ],
      [
        "/registry/tag",
        { sessionId: "s", namespace: "/threads", id: "a", epoch: "x1", tag: "t" },
        'expected {sessionId: string, namespace: string, id: string, epoch: "digits", tag: string}',
      ],
      [
        "/registry/tag",
        { sessionId: "s", namespace: "/threads", id: "a", epoch: "1", tag: "" },
        'expected {sessionId: string, namespace: string, id: string, epoch: "digits", tag: string}',
      ],
      ["/registry/deregister", { sessionId: 5 }, "expected {sessionId: string}"],
    ];
    for (const [path, body, expected] of cases) {
      const res = await unchanged(() => pb.call("POST", path, { token, body }));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: expected });
    }
    const wrongTypes = await unchanged(() =>
      pb.call("POST", "/registry/register", {
        token,
        body: { ...registerBody(worker), headroom: "lots", namespaces: "/threads" },
      }),
    );
    expect(wrongTypes.status).toBe(400);
    expect(((await wrongTypes.json()) as { error: string }).error).toMatch(
      /^expected \{clientId: string, secret: string, namespaces: string\[\]/,
    );
  });

  it("413 body too large past 1 MiB, and past 8 MiB for register", async () => {
    const big = JSON.stringify({ sessionId: "x".repeat(1024 * 1024) });
    for (const path of ["/registry/heartbeat", "/registry/release", "/registry/tag", "/registry/deregister"]) {
      const res = await unchanged(() => pb.call("POST", path, { token, raw: big }));
      expect(res.status).toBe(413);
      expect(await res.json()).toEqual({ error: "body too large" });
    }
    const underRegisterLimit = JSON.stringify({
      ...registerBody(worker),
      instances: { "/threads": ["a"] },
      pad: "x".repeat(2 * 1024 * 1024),
    });
    expect((await pb.call("POST", "/registry/register", { token, raw: underRegisterLimit })).status).toBe(200);
    const overRegisterLimit = JSON.stringify({ ...registerBody(worker), pad: "x".repeat(8 * 1024 * 1024) });
    const res = await unchanged(() => pb.call("POST", "/registry/register", { token, raw: overRegisterLimit }));
    expect(res.status).toBe(413);
  });

  it("413 when the streamed body exceeds the limit without a content-length", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ < 40) controller.enqueue(chunk);
        else controller.close();
      },
    });
    const res = await unchanged(async () =>
      pb.app.request("/registry/heartbeat", {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
        body: stream,
        duplex: "half",
      } as RequestInit),
    );
    expect(res.status).toBe(413);
    expect(sent).toBeLessThan(40);
  });
});
