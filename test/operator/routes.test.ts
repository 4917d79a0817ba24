import { describe, expect, it } from "vitest";
import { mintCredential } from "../../src/auth/mint.ts";
import type { HealthReply, OverviewReply, WorkersReply } from "../../src/cli/replies.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const op = (claim = {}) => credential("pinboard:operator", claim);
/** A read route's status and JSON body, read as `T` (the answer types of src/cli/replies.ts). */
const get = async <T = unknown>(path: string, tok: string) => {
  const res = await pb.call("GET", path, { token: tok });
  return { status: res.status, body: (await res.json()) as T };
};
const post = async (path: string, tok: string, body: unknown) => {
  const res = await pb.call("POST", path, { token: tok, body });
  return { status: res.status, body: (await res.json()) as unknown };
};

describe("operator routes", () => {
  it("need the operator scope", async () => {
    for (const path of ["/registry/health", "/registry/workers", "/registry/overview", "/registry/stats"]) {
      const res = await pb.call("GET", path, { token });
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: "forbidden" });
      expect((await pb.call("GET", path)).status).toBe(401);
    }
  });

  it("GET /registry/health reports this node", async () => {
    const { status, body } = await get("/registry/health", await op());
    expect(status).toBe(200);
    expect(body).toEqual({ resolutions: {}, connections: 0, quarantineMs: 0, uptimeMs: expect.any(Number) });
    await t.redis.client.set("pinboard:{3}:boot_time", String((await t.redis.timeMs()) - 5000));
    const later = await get<HealthReply>("/registry/health", await op());
    expect(later.body.quarantineMs).toBeGreaterThan(9000);
    expect(later.body.quarantineMs).toBeLessThanOrEqual(10000);
    await t.redis.client.del("pinboard:{3}:boot_time");
  });

  it("GET /registry/workers lists live records without secret or account, filtered and sorted", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { namespaces: ["/threads", "/rooms"] }));
    const b = await registerOk(pb, token, registerBody(worker, { namespaces: ["/rooms"] }));
    const all = await get<WorkersReply>("/registry/workers", await op());
    const ids = all.body.workers.map((w) => w.sessionId);
    expect(ids).toEqual([...ids].sort());
    const mine = all.body.workers.find((w) => w.sessionId === a.sessionId);
    expect(mine).toEqual({
      sessionId: a.sessionId,
      clientId: expect.any(String),
      advertiseUrl: worker.url,
      namespaces: ["/threads", "/rooms"],
      hostname: null,
      envs: {},
      takeover: null,
      headroom: 100,
      draining: false,
      expiry: expect.any(Number),
    });
    expect(JSON.stringify(all.body)).not.toContain(worker.secret);
    const narrow = await get<WorkersReply>("/registry/workers", await op({ namespaces: ["/threads"] }));
    const seen = narrow.body.workers.map((w) => w.sessionId);
    expect(seen).toContain(a.sessionId);
    expect(seen).not.toContain(b.sessionId);
    expect(narrow.body.workers.find((w) => w.sessionId === a.sessionId)?.namespaces).toEqual(["/threads"]);
  });

  it("GET /registry/overview filters by ns, prefix and tag, live placements only", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { namespaces: ["/docs"] }));
    await putRow(t, "/docs", "H~1", { sessionId: a.sessionId, epoch: "10", tag: "ws:W" });
    await putRow(t, "/docs", "H~2", { sessionId: a.sessionId, epoch: "11" });
    await putRow(t, "/docs", "Z~3", { sessionId: a.sessionId, epoch: "12", tag: "ws:W" });
    await putRow(t, "/docs", "dead", { sessionId: "gone-session", epoch: "13", tag: "ws:W" });
    for (let b = 0; b < 16; b++) await t.redis.client.sadd(`pinboard:{${b}}:spaces`, "*\n/docs");
    const { status, body } = await get<OverviewReply>("/registry/overview?ns=/docs&prefix=H~&tag=ws:W", await op());
    expect(status).toBe(200);
    expect(body.namespaces).toEqual([
      {
        hostname: null,
        env: null,
        namespace: "/docs",
        sessionIds: [a.sessionId],
        entries: [{ id: "H~1", sessionId: a.sessionId, tag: "ws:W" }],
      },
    ]);
    const untagged = await get<OverviewReply>("/registry/overview?ns=/docs", await op());
    expect(untagged.body.namespaces[0]?.entries.map((e) => e.id)).toEqual(["H~1", "H~2", "Z~3"]);
    expect(await get("/registry/overview?ns=docs", await op())).toEqual({
      status: 400,
      body: { error: "invalid namespace" },
    });
    expect(await get("/registry/overview?tag=", await op())).toEqual({ status: 400, body: { error: "empty tag" } });
    expect(await get("/registry/overview?tag=%20", await op())).toEqual({ status: 400, body: { error: "empty tag" } });
  });

  it("POST /registry/wind_down stamps the fence and queues a message to the owner", async () => {
    const a = await registerOk(pb, token, registerBody(worker, { namespaces: ["/wd"] }));
    await putRow(t, "/wd", "w1", { sessionId: a.sessionId, epoch: "20" });
    const before = await t.redis.timeMs();
    expect(await post("/registry/wind_down", await op(), { namespace: "/wd", id: "w1", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: true },
    });
    const row = await getRow(t, "/wd", "w1");
    expect(Number(row!.expiry)).toBeGreaterThanOrEqual(before + 60_000);
    expect(Number(row!.expiry)).toBeLessThan(before + 62_000);
    const hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, a.sessionId) });
    const { messages } = (await hb.json()) as { messages: unknown[] };
    // The seconds left, rounded down (the worker must be gone by the time the row is free): 59.
    expect(messages).toEqual([{ msgId: expect.any(String), type: "wind_down", ns: "/wd", id: "w1", deadline: 59 }]);

    // A short deadline is raised to one lease; null clears the fence and revokes.
    await post("/registry/wind_down", await op(), { namespace: "/wd", id: "w1", deadline: 1 });
    expect(Number((await getRow(t, "/wd", "w1"))!.expiry)).toBeGreaterThanOrEqual(before + 15_000);
    await post("/registry/wind_down", await op(), { namespace: "/wd", id: "w1", deadline: null });
    expect((await getRow(t, "/wd", "w1"))!.expiry).toBe("");

    expect(await post("/registry/wind_down", await op(), { namespace: "/wd", id: "nope", deadline: 5 })).toEqual({
      status: 200,
      body: { queued: false },
    });
    await putRow(t, "/wd", "w2", { sessionId: a.sessionId, epoch: "21" });
    expect(await post("/registry/wind_down", await op(), { namespace: "/wd", deadline: 30 })).toEqual({
      status: 200,
      body: { queued: 2 },
    });
  });

  it("wind_down refuses env in single mode and out-of-scope namespaces", async () => {
    expect(await post("/registry/wind_down", await op(), { namespace: "/wd", deadline: 5, env: "prod" })).toEqual({
      status: 400,
      body: { error: "env requires hostname-aware mode" },
    });
    const a = await registerOk(pb, token, registerBody(worker, { namespaces: ["/wd2"] }));
    await putRow(t, "/wd2", "x", { sessionId: a.sessionId, epoch: "30" });
    const before = await t.snapshot();
    expect(
      await post("/registry/wind_down", await op({ namespaces: ["/other"] }), {
        namespace: "/wd2",
        id: "x",
        deadline: 5,
      }),
    ).toEqual({
      status: 403,
      body: { error: "namespace not allowed: /wd2" },
    });
    expect(await t.snapshot()).toEqual(before);
  });

  it("POST /registry/drain cordons or times a drain that the heartbeat reports; undrain revokes", async () => {
    const clientId = "drainee";
    const a = await registerOk(pb, token, registerBody(worker, { clientId }));
    expect(await post("/registry/drain", await op(), { clientId, deadline: null })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await t.redis.client.pttl(`pinboard:{global}:drain:${clientId}`)).toBe(-1);
    expect(JSON.parse((await t.redis.hget("pinboard:{2}:workers", a.sessionId))!).draining).toBe(true);
    let hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, a.sessionId) });
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: true });

    expect(await post("/registry/drain", await op(), { clientId, deadline: 120 })).toEqual({
      status: 200,
      body: { drained: true },
    });
    const ttl = await t.redis.client.pttl(`pinboard:{global}:drain:${clientId}`);
    expect(ttl).toBeGreaterThan(7 * 24 * 3600 * 1000 + 110_000);
    hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, a.sessionId) });
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: true, drainDeadline: 120 });

    expect(await post("/registry/undrain", await op(), { clientId })).toEqual({ status: 200, body: { revoked: true } });
    expect(await post("/registry/undrain", await op(), { clientId })).toEqual({
      status: 200,
      body: { revoked: false },
    });
    hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, a.sessionId) });
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: false });

    for (const [claim, id] of [
      [{}, "unknown-client"],
      [{ namespaces: ["/elsewhere"] }, clientId],
    ] as const) {
      const tok = await op(claim);
      expect(await post("/registry/drain", tok, { clientId: id, deadline: null })).toEqual({
        status: 403,
        body: { error: "forbidden" },
      });
      expect(await post("/registry/undrain", tok, { clientId: id })).toEqual({
        status: 403,
        body: { error: "forbidden" },
      });
    }
  });

  it("an operator credential needs no allowedBackendHosts; a worker credential without it may register no backend", async () => {
    const minted = (scope: string) =>
      mintCredential({ secret: TEST_PASSPORT_SECRET, sub: "tester", scopes: [scope], pinboard: { namespaces: ["*"] } });
    const body = registerBody(worker);
    const a = await registerOk(pb, token, body);
    const operator = await minted("pinboard:operator");
    const listed = await get<WorkersReply>("/registry/workers", operator);
    expect(listed.status).toBe(200);
    expect(listed.body.workers.map((w) => w.sessionId)).toContain(a.sessionId);
    expect(await post("/registry/drain", operator, { clientId: body.clientId, deadline: null })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await post("/registry/undrain", operator, { clientId: body.clientId })).toEqual({
      status: 200,
      body: { revoked: true },
    });
    const host = new URL(worker.url).hostname;
    const refused = await pb.call("POST", "/registry/register", {
      token: await minted("pinboard:worker"),
      body: registerBody(worker),
    });
    expect(refused.status).toBe(403);
    expect(await refused.json()).toEqual({ error: `backend host not allowed: ${host}` });
  });
});
