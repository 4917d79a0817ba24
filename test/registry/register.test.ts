import { beforeEach, describe, expect, it } from "vitest";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerBodyRedirectedTo, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({ PINBOARD_VERIFY_TIMEOUT_MS: "300" }, (f) => ({ t, pb, worker, token } = f));
beforeEach(() => {
  worker.mode = "answer";
});

describe("POST /registry/register", () => {
  it("probes the advertise URL with the secret and answers a session", async () => {
    const body = registerBody(worker);
    const res = await pb.call("POST", "/registry/register", { token, body });
    expect(res.status).toBe(200);
    const json = await res.json();
    expect(json).toEqual({ sessionId: expect.any(String), expiresInMs: 15000, draining: false });
    const probe = worker.seen.at(-1)!;
    expect(probe.method).toBe("GET");
    expect(probe.url).toBe(`/_pinned/challenge?challenge=${body.challenge}`);
    expect(probe.headers["pinboard-proxy-secret"]).toBe(worker.secret);
    const stored = JSON.parse((await t.redis.hget("pinboard:{global}:sessions", json.sessionId))!);
    expect(stored).toMatchObject({
      clientId: body.clientId,
      advertiseUrl: worker.url,
      namespaces: ["/threads"],
      headroom: 100,
    });
    for (let b = 0; b < 16; b++) {
      expect(await t.redis.client.hexists(`pinboard:{${b}}:nsw:/threads`, json.sessionId)).toBe(1);
      expect(await t.redis.hget(`pinboard:{${b}}:workers`, json.sessionId)).not.toBeNull();
    }
  });

  it("strips trailing slashes from the advertise URL", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { advertiseUrl: `${worker.url}//` }));
    const stored = JSON.parse((await t.redis.hget("pinboard:{global}:sessions", sessionId))!);
    expect(stored.advertiseUrl).toBe(worker.url);
  });

  for (const mode of ["mismatch", "timeout", "error500", "empty", "huge", "not-json"] as const) {
    it(`answers 400 registration probe failed when the probe gets ${mode}, writing nothing`, async () => {
      worker.mode = mode;
      const before = await t.snapshot();
      const res = await pb.call("POST", "/registry/register", { token, body: registerBody(worker) });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "registration probe failed" });
      expect(await t.snapshot()).toEqual(before);
    });
  }

  it("never follows a redirect from the probe", async () => {
    const target = await startChallengeServer(worker.secret);
    try {
      const body = registerBodyRedirectedTo(worker, target);
      const before = await t.snapshot();
      const res = await pb.call("POST", "/registry/register", { token, body });
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "registration probe failed" });
      expect(await t.snapshot()).toEqual(before);
      expect(worker.seen.at(-1)?.url).toBe(`/_pinned/challenge?challenge=${body.challenge}`);
      expect(target.seen).toHaveLength(0);
    } finally {
      await target.close();
    }
  });

  it("fails the probe of an unreachable advertise URL", async () => {
    const res = await pb.call("POST", "/registry/register", {
      token,
      body: registerBody(worker, { advertiseUrl: "http://127.0.0.1:1" }),
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({ error: "registration probe failed" });
  });
});

describe("POST /registry/heartbeat", () => {
  it("renews the lease, replaces headroom and sets then clears degraded", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    let res = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: heartbeatBody(worker, sessionId, { headroom: 7 }),
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ expiresInMs: 15000, draining: false });
    const mirror = JSON.parse((await t.redis.hget("pinboard:{3}:workers", sessionId))!);
    expect(mirror.headroom).toBe(7);

    worker.mode = "error500";
    res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ expiresInMs: 15000, draining: false, degraded: true });
    expect(JSON.parse((await t.redis.hget("pinboard:{0}:workers", sessionId))!).degradedSince).toEqual(
      expect.any(Number),
    );

    worker.mode = "answer";
    res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(await res.json()).toEqual({ expiresInMs: 15000, draining: false });
  });

  it("voids the registration when the probe answers another value", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    worker.mode = "mismatch";
    const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({
      error: "registration voided: challenge value mismatch on the advertise URL",
      reregister: true,
    });
    expect(await t.redis.hget("pinboard:{global}:sessions", sessionId)).toBeNull();
    expect(await t.redis.hget("pinboard:{5}:workers", sessionId)).toBeNull();
    expect(await t.redis.client.hexists("pinboard:{5}:nsw:/threads", sessionId)).toBe(0);
  });

  it("answers 409 unknown session for an unknown session", async () => {
    const res = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, "nope") });
    expect(res.status).toBe(409);
    expect(await res.json()).toEqual({ error: "unknown session", reregister: true });
  });
});

describe("POST /registry/deregister", () => {
  it("drops the record and the namespace lists", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId } });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({});
    expect(await t.redis.hget("pinboard:{global}:sessions", sessionId)).toBeNull();
    expect(await t.redis.client.hexists("pinboard:{9}:nsw:/threads", sessionId)).toBe(0);
    const again = await pb.call("POST", "/registry/deregister", { token, body: { sessionId } });
    expect(again.status).toBe(409);
    expect(await again.json()).toEqual({ error: "unknown session", reregister: true });
  });
});
