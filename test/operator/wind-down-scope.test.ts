import { describe, expect, it } from "vitest";
import { windDownRowsScript } from "../../src/operator/lua/index.ts";
import { Keys } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow, rowKey } from "../support/rows.ts";

/**
 * POST /registry/wind_down against the operator's claims in hostname-aware mode: a
 * namespace-wide wind-down stamps and notifies only the rows the claim covers (judged on each
 * owner record's hostname and envs[ns]), messages only live owners, and a single-id wind-down
 * answers an out-of-scope operator alike whether or not the row exists.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, worker, token } = f));

const op = (claim = {}) => credential("pinboard:operator", claim);
const post = async (path: string, tok: string, body: unknown) => {
  const res = await pb.call("POST", path, { token: tok, body });
  return { status: res.status, body: (await res.json()) as unknown };
};
const register = (hostname: string, ns: string) =>
  registerOk(pb, token, registerBody(worker, { hostname, env: "prod", namespaces: [ns] }));

/** The wind_down messages a session's next heartbeat delivers (acking the ones it had), sorted by id. */
const acked = new Map<string, string[]>();
async function windDowns(sessionId: string): Promise<Array<{ id: string; ns: string; deadline: number | null }>> {
  const res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(worker, sessionId, { acks: acked.get(sessionId) ?? [] }),
  });
  expect(res.status).toBe(200);
  const answer = (await res.json()) as {
    messages?: Array<{ msgId: string; type: string; ns: string; id: string; deadline: number | null }> | null;
  };
  const messages = answer.messages ?? [];
  acked.set(
    sessionId,
    messages.map((m) => m.msgId),
  );
  expect(messages.every((m) => m.type === "wind_down")).toBe(true);
  return messages.map(({ id, ns, deadline }) => ({ id, ns, deadline })).sort((x, y) => x.id.localeCompare(y.id));
}

const expiryOf = async (ns: string, id: string) => (await getRow(t, ns, id, "prod"))?.expiry;

describe("wind_down and the operator's hostname claim (namespace-wide)", () => {
  it("stamps and notifies only the rows whose owner's hostname the claim covers; null clears only those", async () => {
    const a = await register("a.example", "/h");
    const b = await register("b.example", "/h");
    for (const id of ["a-1", "a-2"]) await putRow(t, "/h", id, { sessionId: a.sessionId, epoch: "10" }, "prod");
    for (const id of ["b-1", "b-2"]) await putRow(t, "/h", id, { sessionId: b.sessionId, epoch: "11" }, "prod");
    const onlyB = await op({ hostnames: ["b.example"] });

    const before = await t.redis.timeMs();
    expect(await post("/registry/wind_down", onlyB, { namespace: "/h", env: "prod", deadline: 600 })).toEqual({
      status: 200,
      body: { queued: 2 },
    });
    for (const id of ["b-1", "b-2"]) {
      const expiry = Number(await expiryOf("/h", id));
      expect(expiry).toBeGreaterThanOrEqual(before + 600_000);
      expect(expiry).toBeLessThan(before + 660_000);
    }
    // a.example's rows are another tenant's: not fenced, and their owner is told nothing.
    expect(await getRow(t, "/h", "a-1", "prod")).toEqual({
      sessionId: a.sessionId,
      epoch: "10",
      expiry: "",
      hostname: "",
      tag: "",
    });
    expect(await getRow(t, "/h", "a-2", "prod")).toEqual({
      sessionId: a.sessionId,
      epoch: "10",
      expiry: "",
      hostname: "",
      tag: "",
    });
    expect(await windDowns(a.sessionId)).toEqual([]);
    expect(await windDowns(b.sessionId)).toEqual([
      { id: "b-1", ns: "/h", deadline: expect.any(Number) },
      { id: "b-2", ns: "/h", deadline: expect.any(Number) },
    ]);

    // a.example's own operator fences a-1; b.example's operator clearing the namespace leaves that fence alone.
    expect(
      await post("/registry/wind_down", await op({ hostnames: ["a.example"] }), {
        namespace: "/h",
        env: "prod",
        id: "a-1",
        deadline: 300,
      }),
    ).toEqual({
      status: 200,
      body: { queued: true },
    });
    const fence = await expiryOf("/h", "a-1");
    expect(fence).toMatch(/^\d+$/);
    expect(await windDowns(a.sessionId)).toEqual([{ id: "a-1", ns: "/h", deadline: expect.any(Number) }]);

    expect(await post("/registry/wind_down", onlyB, { namespace: "/h", env: "prod", deadline: null })).toEqual({
      status: 200,
      body: { queued: 2 },
    });
    expect(await expiryOf("/h", "a-1")).toBe(fence);
    expect(await expiryOf("/h", "a-2")).toBe("");
    expect(await expiryOf("/h", "b-1")).toBe("");
    expect(await expiryOf("/h", "b-2")).toBe("");
    expect(await windDowns(a.sessionId)).toEqual([]);
    expect(await windDowns(b.sessionId)).toEqual([
      { id: "b-1", ns: "/h", deadline: null },
      { id: "b-2", ns: "/h", deadline: null },
    ]);
  });

  it("fences rows of a dead owner, past fences and placeholders without a message; queued counts the messages", async () => {
    const b = await register("b.example", "/hd");
    const now = await t.redis.timeMs();
    await putRow(t, "/hd", "live", { sessionId: b.sessionId, epoch: "20" }, "prod");
    await putRow(t, "/hd", "passed", { sessionId: b.sessionId, epoch: "21", expiry: String(now - 1000) }, "prod");
    await putRow(t, "/hd", "orphan", { sessionId: "gone-session", epoch: "22" }, "prod");
    await putRow(t, "/hd", "placeholder", { sessionId: "", hostname: "b.example" }, "prod");

    expect(await post("/registry/wind_down", await op(), { namespace: "/hd", env: "prod", deadline: 600 })).toEqual({
      status: 200,
      body: { queued: 1 },
    });
    for (const id of ["live", "passed", "orphan", "placeholder"])
      expect(Number(await expiryOf("/hd", id))).toBeGreaterThanOrEqual(now + 600_000);
    expect(await windDowns(b.sessionId)).toEqual([{ id: "live", ns: "/hd", deadline: expect.any(Number) }]);
    // No message went to a session without a record, nor to the placeholder's empty one.
    for (const sid of ["gone-session", ""])
      expect(await t.redis.client.exists(new Keys("pinboard:", 16).queue(sid))).toBe(0);
  });

  it("the stamp is a compare-and-set on the owner it was judged by, and touches only the ids it is given", async () => {
    const a = await register("a.example", "/hc");
    const b = await register("b.example", "/hc");
    await putRow(t, "/hc", "moved", { sessionId: b.sessionId, epoch: "30" }, "prod");
    await putRow(t, "/hc", "other", { sessionId: b.sessionId, epoch: "31" }, "prod");
    const bucket = await new Keys("pinboard:", 16).bucketOf("moved");
    const key = await rowKey("/hc", "moved", "prod");
    const workers = `pinboard:{${bucket}}:workers`;
    // Judged on a.example's session, but b.example's session owns the row at the stamp: nothing changes.
    const rowBefore = await t.redis.hget(key, "moved");
    expect(
      await pb.deps.redis.run(windDownRowsScript, [key, workers], ["99999999999999", "moved", a.sessionId, ""]),
    ).toEqual(["moved", "changed"]);
    expect(await t.redis.hget(key, "moved")).toBe(rowBefore);
    // Judged on its current owner, it is stamped; the other row of the hash is left alone.
    expect(
      await pb.deps.redis.run(windDownRowsScript, [key, workers], ["99999999999999", "moved", b.sessionId, ""]),
    ).toEqual(["moved", "notify"]);
    expect(await expiryOf("/hc", "moved")).toBe("99999999999999");
    expect(await expiryOf("/hc", "other")).toBe("");
    expect(await pb.deps.redis.run(windDownRowsScript, [key, workers], ["", "nope", b.sessionId, ""])).toEqual([]);
  });
});

describe("wind_down of one id never tells an out-of-scope operator whether the row exists", () => {
  it("an operator limited to another env gets the same 403 for an existing and a missing row", async () => {
    const a = await register("a.example", "/he");
    await putRow(t, "/he", "exists", { sessionId: a.sessionId, epoch: "40" }, "prod");
    const staging = await op({ envs: ["staging"] });
    const before = await t.snapshot();
    for (const id of ["exists", "missing"]) {
      expect(await post("/registry/wind_down", staging, { namespace: "/he", env: "prod", id, deadline: 60 })).toEqual({
        status: 403,
        body: { error: "env not allowed: prod" },
      });
    }
    expect(await post("/registry/wind_down", staging, { namespace: "/he", env: "prod", deadline: 60 })).toEqual({
      status: 403,
      body: { error: "env not allowed: prod" },
    });
    expect(await t.snapshot()).toEqual(before);
    // In its own env the same operator learns that nothing is there.
    expect(
      await post("/registry/wind_down", staging, { namespace: "/he", env: "staging", id: "exists", deadline: 60 }),
    ).toEqual({ status: 200, body: { queued: false } });
  });

  it("an operator limited to a hostname gets 403 forbidden alike for another hostname's row and a missing one", async () => {
    const a = await register("a.example", "/hh");
    const b = await register("b.example", "/hh");
    await putRow(t, "/hh", "theirs", { sessionId: a.sessionId, epoch: "50" }, "prod");
    await putRow(t, "/hh", "mine", { sessionId: b.sessionId, epoch: "51" }, "prod");
    const onlyB = await op({ hostnames: ["b.example"] });
    const before = await t.snapshot();
    for (const id of ["theirs", "missing"]) {
      expect(await post("/registry/wind_down", onlyB, { namespace: "/hh", env: "prod", id, deadline: 60 })).toEqual({
        status: 403,
        body: { error: "forbidden" },
      });
    }
    expect(await t.snapshot()).toEqual(before);
    expect(
      await post("/registry/wind_down", onlyB, { namespace: "/hh", env: "prod", id: "mine", deadline: 60 }),
    ).toEqual({ status: 200, body: { queued: true } });
    const [order, ...more] = await windDowns(b.sessionId);
    expect(more).toEqual([]);
    expect(order).toEqual({ id: "mine", ns: "/hh", deadline: expect.any(Number) });
    // Relative seconds at peek time: 60 unless the machine stalled between the two requests.
    expect(order!.deadline).toBeGreaterThan(45);
    expect(order!.deadline).toBeLessThanOrEqual(60);
    // An operator of every hostname still learns that a missing row is missing.
    expect(
      await post("/registry/wind_down", await op(), { namespace: "/hh", env: "prod", id: "missing", deadline: 60 }),
    ).toEqual({ status: 200, body: { queued: false } });
  });
});
