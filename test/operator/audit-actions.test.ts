import { describe, expect, it } from "vitest";
import { newestOf, readTrail, streamIds } from "../support/audit-trail.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { putRow } from "../support/rows.ts";

/**
 * Every operator action through the API lands in the audit trail (GET /registry/audit) with the
 * credential's sub, how the request came (the Pinboard-Via header: console, cli, else api), what
 * it touched and what it answered; a refused action records nothing.
 */

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const op = (sub: string, claim = {}) => credential("pinboard:operator", claim, { sub });
async function post(path: string, tok: string, body: unknown, via?: string) {
  const res = await pb.call("POST", path, {
    token: tok,
    body,
    headers: via === undefined ? {} : { "Pinboard-Via": via },
  });
  return { status: res.status, body: (await res.json()) as unknown };
}
const registered = async (ns: string, clientId: string) =>
  (await registerOk(pb, token, registerBody(worker, { namespaces: [ns], clientId }))).sessionId;

describe("operator actions in the audit trail", () => {
  it("drain, timed drain and undrain: the sub, the via header, the worker and what the action said", async () => {
    const sessionId = await registered("/drains", "client-drains");
    const reader = await op("reader");
    const target = { sessionId, clientId: "client-drains", namespaces: ["/drains"] };

    expect(
      await post("/registry/drain", await op("alice"), { clientId: "client-drains", deadline: null }, "console"),
    ).toEqual({ status: 200, body: { drained: true } });
    expect(await newestOf(pb, reader, "drain", { clientId: "client-drains" })).toMatchObject({
      kind: "action",
      subject: "alice",
      via: "console",
      target,
      detail: { deadline: null },
    });

    const before = await t.redis.timeMs();
    expect(
      (await post("/registry/drain", await op("bob"), { clientId: "client-drains", deadline: 60 }, "CLI")).status,
    ).toBe(200);
    const timed = (await newestOf(pb, reader, "drain", { clientId: "client-drains" }))!;
    expect(timed).toMatchObject({ subject: "bob", via: "cli", target, detail: { deadline: 60 } });
    expect(timed.detail.deadlineAt).toBeGreaterThanOrEqual(before + 60_000);
    expect(timed.detail.deadlineAt).toBeLessThanOrEqual((await t.redis.timeMs()) + 60_000);
    expect(timed.at).toBeGreaterThanOrEqual(before);

    // An unknown via is api: a request cannot pass itself off as the sweeper.
    expect(await post("/registry/undrain", await op("carol"), { clientId: "client-drains" }, "sweeper")).toEqual({
      status: 200,
      body: { revoked: true },
    });
    expect(await newestOf(pb, reader, "undrain", { clientId: "client-drains" })).toMatchObject({
      subject: "carol",
      via: "api",
      target,
      detail: { revoked: true },
    });
  });

  it("wind_down of a placement and of a namespace, and clear_fence, with the answer's counts", async () => {
    const sessionId = await registered("/winds", "client-winds");
    await putRow(t, "/winds", "w1", { sessionId, epoch: "10" });
    await putRow(t, "/winds", "w2", { sessionId, epoch: "11" });
    for (let b = 0; b < 16; b++) await t.redis.client.sadd(`pinboard:{${b}}:spaces`, "*\n/winds");
    const reader = await op("reader");

    const before = await t.redis.timeMs();
    const one = await post("/registry/wind_down", await op("dora"), { namespace: "/winds", id: "w1", deadline: 0 });
    expect(one).toEqual({ status: 200, body: { queued: true } });
    const byId = (await newestOf(pb, reader, "wind_down", { namespace: "/winds", id: "w1" }))!;
    expect(byId).toMatchObject({ subject: "dora", via: "api", target: { namespace: "/winds", id: "w1" } });
    expect(byId.detail).toEqual({ deadline: 0, deadlineAt: expect.any(Number), queued: true });
    // deadline 0 fences at now + one lease (15 s).
    expect(byId.detail.deadlineAt).toBeGreaterThanOrEqual(before + 15_000);

    const all = await post("/registry/wind_down", await op("dora"), { namespace: "/winds", deadline: 30 }, "console");
    expect(all).toEqual({ status: 200, body: { queued: 2 } });
    const byNamespace = (await readTrail(pb, reader, "?type=wind_down&limit=1")).entries[0]!;
    expect(byNamespace).toMatchObject({ via: "console", detail: { deadline: 30, queued: 2 } });
    expect(byNamespace.target).toEqual({ namespace: "/winds" });

    expect(
      await post("/registry/wind_down", await op("erin"), { namespace: "/winds", id: "w2", deadline: null }),
    ).toEqual({ status: 200, body: { queued: true } });
    expect(await newestOf(pb, reader, "clear_fence", { id: "w2" })).toMatchObject({
      subject: "erin",
      target: { namespace: "/winds", id: "w2" },
      detail: { queued: true },
    });
  });

  it("a refused action records nothing", async () => {
    await registered("/guarded", "client-guarded");
    const ids = await streamIds(t);
    const narrow = await op("mallory", { namespaces: ["/elsewhere"] });
    expect((await post("/registry/drain", narrow, { clientId: "client-guarded", deadline: null })).status).toBe(403);
    expect((await post("/registry/undrain", narrow, { clientId: "client-guarded" })).status).toBe(403);
    expect((await post("/registry/wind_down", narrow, { namespace: "/guarded", deadline: 0 })).status).toBe(403);
    expect((await post("/registry/wind_down", await op("m"), { namespace: "bad", deadline: 0 })).status).toBe(400);
    expect((await post("/registry/drain", await op("m"), { clientId: "nobody", deadline: null })).status).toBe(403);
    expect(await streamIds(t)).toEqual(ids);
  });
});
