import { describe, expect, it } from "vitest";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string, otherAccount: string;
useRegistryFixture(
  {},
  (f) =>
    ({
      t,
      pb,
      worker,
      token,
      credentials: { otherAccount },
    } = f),
  {
    token: { sub: "w", account: "acme" },
    credentials: { otherAccount: ["pinboard:worker", {}, { sub: "w", account: "globex" }] },
  },
);

async function json(res: Response): Promise<unknown> {
  return res.json();
}

/** POST /registry/tag as `tok`: its status and JSON body. */
async function tagAs(tok: string, body: Record<string, unknown>): Promise<{ status: number; body: unknown }> {
  const res = await pb.call("POST", "/registry/tag", { token: tok, body });
  return { status: res.status, body: await json(res) };
}

describe("POST /registry/release", () => {
  it("compare-and-deletes on sessionId and the quoted epoch", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "r1", { sessionId, epoch: "100" });
    await putRow(t, "/threads", "r2", { sessionId: "someone-else", epoch: "100" });
    await putRow(t, "/threads", "r3", { sessionId }); // epoch-less placeholder

    const wrongEpoch = await pb.call("POST", "/registry/release", {
      token,
      body: [{ sessionId, namespace: "/threads", id: "r1", epoch: "99" }],
    });
    expect(await json(wrongEpoch)).toEqual({ released: 0 });
    expect(await getRow(t, "/threads", "r1")).not.toBeNull();

    const res = await pb.call("POST", "/registry/release", {
      token,
      body: [
        { sessionId, namespace: "/threads", id: "r1", epoch: "100" },
        { sessionId, namespace: "/threads", id: "r2", epoch: "100" },
        { sessionId, namespace: "/threads", id: "r3", epoch: "" },
        { sessionId, namespace: "/threads", id: "missing", epoch: "1" },
      ],
    });
    expect(res.status).toBe(200);
    expect(await json(res)).toEqual({ released: 2 });
    expect(await getRow(t, "/threads", "r1")).toBeNull();
    expect(await getRow(t, "/threads", "r2")).not.toBeNull();
    expect(await getRow(t, "/threads", "r3")).toBeNull();
  });

  it("an epoch-less quote does not free a row that has an epoch", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "r4", { sessionId, epoch: "5" });
    expect(
      await json(
        await pb.call("POST", "/registry/release", {
          token,
          body: [{ sessionId, namespace: "/threads", id: "r4", epoch: "" }],
        }),
      ),
    ).toEqual({ released: 0 });
  });

  it("refuses bad namespaces, unknown sessions and other accounts, changing nothing", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "keep", { sessionId, epoch: "7" });
    const cases: Array<[unknown, string, number, unknown]> = [
      [[{ sessionId, namespace: "threads", id: "keep", epoch: "7" }], token, 400, { error: "invalid namespace" }],
      [
        [{ sessionId, namespace: "/rooms", id: "keep", epoch: "7" }],
        token,
        400,
        { error: "namespace not registered: /rooms" },
      ],
      [
        [{ sessionId: "ghost", namespace: "/threads", id: "keep", epoch: "7" }],
        token,
        409,
        { error: "unknown session", reregister: true },
      ],
      [[{ sessionId, namespace: "/threads", id: "keep", epoch: "7" }], otherAccount, 403, { error: "forbidden" }],
      // One bad item spoils the batch: the good first item is not released either.
      [
        [
          { sessionId, namespace: "/threads", id: "keep", epoch: "7" },
          { sessionId: "ghost", namespace: "/threads", id: "x" },
        ],
        token,
        409,
        { error: "unknown session", reregister: true },
      ],
    ];
    for (const [body, tok, status, error] of cases) {
      const before = await t.snapshot();
      const res = await pb.call("POST", "/registry/release", { token: tok, body });
      expect(res.status).toBe(status);
      expect(await json(res)).toEqual(error);
      expect(await t.snapshot()).toEqual(before);
    }
    // A credential whose claims no longer cover the record: 403 forbidden, nothing released.
    const narrow = await credential("pinboard:worker", { namespaces: ["/rooms"] }, { sub: "w", account: "acme" });
    const before = await t.snapshot();
    const res = await pb.call("POST", "/registry/release", {
      token: narrow,
      body: [{ sessionId, namespace: "/threads", id: "keep", epoch: "7" }],
    });
    expect({ status: res.status, body: await json(res) }).toEqual({ status: 403, body: { error: "forbidden" } });
    expect(await t.snapshot()).toEqual(before);
    expect(await getRow(t, "/threads", "keep")).toMatchObject({ sessionId, epoch: "7" });
  });

  it("works for an expired session that is not yet pruned (release skips the expiry check)", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    const key = "pinboard:{global}:sessions";
    const rec = JSON.parse((await t.redis.hget(key, sessionId))!);
    await t.redis.client.hset(key, sessionId, JSON.stringify({ ...rec, expiry: Date.now() - 1000 }));
    await putRow(t, "/threads", "late", { sessionId, epoch: "9" });
    const res = await pb.call("POST", "/registry/release", {
      token,
      body: [{ sessionId, namespace: "/threads", id: "late", epoch: "9" }],
    });
    expect(await json(res)).toEqual({ released: 1 });
    const hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, sessionId) });
    expect(hb.status).toBe(409);
    expect(await json(hb)).toEqual({ error: "unknown session", reregister: true });
  });
});

describe("POST /registry/tag", () => {
  it("compare-and-sets the owner tag", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    await putRow(t, "/threads", "t1", { sessionId, epoch: "42" });
    const call = (epoch: string, tag: string, sid = sessionId) =>
      pb
        .call("POST", "/registry/tag", { token, body: { sessionId: sid, namespace: "/threads", id: "t1", epoch, tag } })
        .then(json);
    expect(await call("41", "ws:old")).toEqual({ tagged: false });
    expect(await call("42", "ws:W")).toEqual({ tagged: true });
    expect((await getRow(t, "/threads", "t1"))!.tag).toBe("ws:W");
    expect(await call("42", "line\nbreak")).toEqual({ tagged: true });
    expect(await getRow(t, "/threads", "t1")).toEqual({
      sessionId,
      epoch: "42",
      expiry: "",
      hostname: "",
      tag: "line\nbreak",
    });
    expect(
      await json(
        await pb.call("POST", "/registry/tag", {
          token,
          body: { sessionId, namespace: "/threads", id: "nope", epoch: "42", tag: "x" },
        }),
      ),
    ).toEqual({ tagged: false });
    // Refusals answer the contract's body and leave the keyspace (the row's tag too) as it was.
    const before = await t.snapshot();
    expect(await tagAs(token, { sessionId: "ghost", namespace: "/threads", id: "t1", epoch: "42", tag: "x" })).toEqual({
      status: 409,
      body: { error: "unknown session", reregister: true },
    });
    expect(await tagAs(otherAccount, { sessionId, namespace: "/threads", id: "t1", epoch: "42", tag: "x" })).toEqual({
      status: 403,
      body: { error: "forbidden" },
    });
    const narrow = await credential("pinboard:worker", { namespaces: ["/rooms"] }, { sub: "w", account: "acme" });
    expect(await tagAs(narrow, { sessionId, namespace: "/threads", id: "t1", epoch: "42", tag: "x" })).toEqual({
      status: 403,
      body: { error: "forbidden" },
    });
    expect(await t.snapshot()).toEqual(before);
    expect((await getRow(t, "/threads", "t1"))!.tag).toBe("line\nbreak");
  });
});

describe("accounts", () => {
  it("a client id belongs to the account that registered it", async () => {
    const body = registerBody(worker, { clientId: "shared-client" });
    await registerOk(pb, token, body);
    const before = await t.snapshot();
    const res = await pb.call("POST", "/registry/register", {
      token: otherAccount,
      body: registerBody(worker, { clientId: "shared-client" }),
    });
    expect(res.status).toBe(409);
    expect(await json(res)).toEqual({ error: "client belongs to another account" });
    expect(await t.snapshot()).toEqual(before);
  });

  it("heartbeat and deregister of another account's session are 403", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    for (const path of ["/registry/heartbeat", "/registry/deregister"]) {
      const before = await t.snapshot();
      const res = await pb.call("POST", path, { token: otherAccount, body: heartbeatBody(worker, sessionId) });
      expect(res.status).toBe(403);
      expect(await json(res)).toEqual({ error: "forbidden" });
      expect(await t.snapshot()).toEqual(before);
    }
  });

  it("a credential whose claims no longer cover the record is 403 on heartbeat", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker));
    const narrow = await credential("pinboard:worker", { namespaces: ["/rooms"] }, { sub: "w", account: "acme" });
    const before = await t.snapshot();
    const res = await pb.call("POST", "/registry/heartbeat", { token: narrow, body: heartbeatBody(worker, sessionId) });
    expect({ status: res.status, body: await json(res) }).toEqual({ status: 403, body: { error: "forbidden" } });
    // Refused before the lease is renewed: the record and its mirrors are untouched.
    expect(await t.snapshot()).toEqual(before);
  });
});

describe("instances reclaim", () => {
  it("re-binds rows owned by prevSessionId keeping their epoch; every other id is a duplicate", async () => {
    const clientId = "reclaimer";
    const first = await registerOk(pb, token, registerBody(worker, { clientId, namespaces: ["/threads", "/rooms"] }));
    await putRow(t, "/threads", "mine", { sessionId: first.sessionId, epoch: "1001", tag: "ws:keep" });
    await putRow(t, "/rooms", "mine-too", {
      sessionId: first.sessionId,
      epoch: "1002",
      expiry: String(Date.now() + 60_000),
    });
    await putRow(t, "/threads", "theirs", { sessionId: "another-session", epoch: "1003" });

    const second = await registerOk(
      pb,
      token,
      registerBody(worker, {
        clientId,
        namespaces: ["/threads", "/rooms"],
        prevSessionId: first.sessionId,
        instances: { "/threads": ["mine", "theirs", "gone"], "/rooms": ["mine-too"] },
      }),
    );
    expect(second.duplicates?.sort((a, b) => a.id.localeCompare(b.id))).toEqual([
      { ns: "/threads", id: "gone" },
      { ns: "/threads", id: "theirs" },
    ]);
    expect(await getRow(t, "/threads", "mine")).toEqual({
      sessionId: second.sessionId,
      epoch: "1001",
      expiry: "",
      hostname: "",
      tag: "ws:keep",
    });
    expect((await getRow(t, "/rooms", "mine-too"))!.sessionId).toBe(second.sessionId);
    expect(await getRow(t, "/threads", "theirs")).toMatchObject({ sessionId: "another-session" });
    // The same client registering again replaced the first session everywhere.
    expect(await t.redis.hget("pinboard:{global}:sessions", first.sessionId)).toBeNull();
    expect(await t.redis.hget("pinboard:{4}:workers", first.sessionId)).toBeNull();

    // The reclaimed row with a wind-down expiry re-queued its wind_down to the new session.
    const hb = await pb.call("POST", "/registry/heartbeat", { token, body: heartbeatBody(worker, second.sessionId) });
    const answer = (await json(hb)) as { messages: Array<Record<string, unknown>> };
    expect(answer.messages).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/rooms", id: "mine-too", deadline: expect.any(Number) },
    ]);
    expect(answer.messages[0]!.deadline).toBeGreaterThan(55);
    expect(answer.messages[0]!.deadline).toBeLessThanOrEqual(60);
  });

  it("does not reclaim through a prevSessionId of another account", async () => {
    const victim = await registerOk(pb, otherAccount, registerBody(worker));
    await putRow(t, "/threads", "victim-row", { sessionId: victim.sessionId, epoch: "77" });
    const thief = await registerOk(
      pb,
      token,
      registerBody(worker, { prevSessionId: victim.sessionId, instances: { "/threads": ["victim-row"] } }),
    );
    expect(thief.duplicates).toEqual([{ ns: "/threads", id: "victim-row" }]);
    expect((await getRow(t, "/threads", "victim-row"))!.sessionId).toBe(victim.sessionId);
  });
});
