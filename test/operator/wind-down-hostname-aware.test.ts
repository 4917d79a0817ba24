import { describe, expect, it } from "vitest";
import { until } from "../support/local-worker.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";
import { type ScriptedWorker, useScriptedWorker, viaApp } from "../support/scripted-worker.ts";

/**
 * POST /registry/wind_down in hostname-aware mode, beyond what wind-down-scope.test.ts holds
 * (the hostname claim over a namespace, dead-owner rows, the compare-and-set, the env claim on
 * the request): env is required and names the placement hash; a row is judged on its owner
 * record's hostname and envs[ns], or on the row's own hostname once the record is gone; the
 * fence outlives its owner and the replacement owner a client request places is told, by a
 * wind_down in its heartbeat's messages; the owner tag survives the wind-down and is dropped by
 * the re-placement.
 */

let t: TestRedis, pb: TestPinboard, token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, token } = f));

let w: ScriptedWorker;
useScriptedWorker((x) => (w = x));

const op = (claim = {}) => credential("pinboard:operator", claim);
/** A row as a wind-down leaves it: owner, epoch, hostname and tag as stated, an expiry (the fence) stamped. */
const fencedRow = (sessionId: string, epoch: string, hostname: string, tag: string) => ({
  sessionId,
  epoch,
  expiry: expect.stringMatching(/^\d+$/),
  hostname,
  tag,
});
async function post(path: string, tok: string, body: unknown): Promise<{ status: number; body: unknown }> {
  const res = await pb.call("POST", path, { token: tok, body });
  return { status: res.status, body: await res.json() };
}
const windDown = async (tok: string, body: Record<string, unknown>) => post("/registry/wind_down", tok, body);

async function register(fields: Record<string, unknown>): Promise<string> {
  return w.register(viaApp(pb), token, fields);
}

type Message = { msgId: string; type: string; ns: string; id: string; deadline: number | null };
/** One heartbeat of the session: its messages (re-delivered until acked; acks none). */
async function messagesOf(sessionId: string): Promise<Message[]> {
  const res = await pb.call("POST", "/registry/heartbeat", { token, body: w.heartbeatBody(sessionId) });
  expect(res.status).toBe(200);
  return ((await res.json()) as { messages?: Message[] }).messages ?? [];
}

describe("wind_down's env in hostname-aware mode", () => {
  it("400 env is required in hostname-aware mode, absent or null, and nothing changes", async () => {
    const sid = await register({ hostname: "req.example", env: "prod", namespaces: ["/wreq"] });
    await putRow(t, "/wreq", "doc", { sessionId: sid, epoch: "10" }, "prod");
    const before = await t.snapshot();
    for (const body of [
      { namespace: "/wreq", id: "doc", deadline: 60 },
      { namespace: "/wreq", id: "doc", deadline: 60, env: null },
      { namespace: "/wreq", deadline: 60 },
    ]) {
      expect(await windDown(await op(), body)).toEqual({
        status: 400,
        body: { error: "env is required in hostname-aware mode" },
      });
    }
    expect(await t.snapshot()).toEqual(before);
    expect(await messagesOf(sid)).toEqual([]);
  });

  it("names the placement hash: the same id in two envs, only the named env's row is fenced and its owner told", async () => {
    const prod = await register({ hostname: "p.example", env: "prod", namespaces: ["/wenv"] });
    const staging = await register({ hostname: "s.example", env: "staging", namespaces: ["/wenv"] });
    await putRow(t, "/wenv", "doc", { sessionId: prod, epoch: "20" }, "prod");
    await putRow(t, "/wenv", "doc", { sessionId: staging, epoch: "21" }, "staging");

    const before = await t.redis.timeMs();
    expect(await windDown(await op(), { namespace: "/wenv", id: "doc", env: "staging", deadline: 300 })).toEqual({
      status: 200,
      body: { queued: true },
    });
    const fenced = (await getRow(t, "/wenv", "doc", "staging"))!;
    expect(fenced).toEqual(fencedRow(staging, "21", "", ""));
    expect(Number(fenced.expiry)).toBeGreaterThanOrEqual(before + 300_000);
    expect(Number(fenced.expiry)).toBeLessThan(before + 360_000);
    expect(await getRow(t, "/wenv", "doc", "prod")).toEqual({
      sessionId: prod,
      epoch: "20",
      expiry: "",
      hostname: "",
      tag: "",
    });
    expect(await messagesOf(staging)).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/wenv", id: "doc", deadline: expect.any(Number) },
    ]);
    expect(await messagesOf(prod)).toEqual([]);

    // Namespace-wide, too: env prod counts and fences prod's row only.
    expect(await windDown(await op(), { namespace: "/wenv", env: "prod", deadline: 300 })).toEqual({
      status: 200,
      body: { queued: 1 },
    });
    expect((await getRow(t, "/wenv", "doc", "prod"))!.expiry).toMatch(/^\d+$/);
    expect((await getRow(t, "/wenv", "doc", "staging"))!.expiry).toBe(fenced.expiry);
    expect(await messagesOf(prod)).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/wenv", id: "doc", deadline: expect.any(Number) },
    ]);
  });
});

describe("wind_down judges a row on its owner record, or on the row once the record is gone", () => {
  it("the owner's hostname and envs[ns] decide while the owner has a record; the row's hostname and env after", async () => {
    // The owner serves /wsc in env canary (envs overrides its default env prod). Its rows carry
    // another hostname than its record: the record is what counts while it exists.
    const owner = await register({
      hostname: "own.example",
      env: "prod",
      envs: { "/wsc": "canary" },
      namespaces: ["/wsc"],
    });
    await putRow(t, "/wsc", "c1", { sessionId: owner, epoch: "30", hostname: "row.example" }, "canary");
    await putRow(t, "/wsc", "p1", { sessionId: owner, epoch: "31", hostname: "row.example" }, "prod");
    const ownHost = await op({ hostnames: ["own.example"] });
    const rowHost = await op({ hostnames: ["row.example"] });
    const prodOnly = await op({ envs: ["prod"] });

    let before = await t.snapshot();
    // Judged on the record's hostname: the row's own hostname does not let row.example's operator in.
    expect(await windDown(rowHost, { namespace: "/wsc", env: "canary", id: "c1", deadline: 60 })).toEqual({
      status: 403,
      body: { error: "forbidden" },
    });
    expect(await windDown(rowHost, { namespace: "/wsc", env: "canary", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: 0 },
    });
    // Judged on the record's envs[ns] (canary), though the request's env (prod) is allowed.
    expect(await windDown(prodOnly, { namespace: "/wsc", env: "prod", id: "p1", deadline: 60 })).toEqual({
      status: 403,
      body: { error: "env not allowed: canary" },
    });
    expect(await windDown(prodOnly, { namespace: "/wsc", env: "prod", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: 0 },
    });
    expect(await t.snapshot()).toEqual(before);
    expect(await messagesOf(owner)).toEqual([]);

    // The owner's own scope is let in, and the owner told.
    expect(await windDown(ownHost, { namespace: "/wsc", env: "canary", id: "c1", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: true },
    });
    expect(
      await windDown(await op({ envs: ["prod", "canary"] }), {
        namespace: "/wsc",
        env: "prod",
        id: "p1",
        deadline: 60,
      }),
    ).toEqual({
      status: 200,
      body: { queued: true },
    });
    const told = await messagesOf(owner);
    expect(told.map((m) => [m.type, m.ns, m.id])).toEqual([
      ["wind_down", "/wsc", "c1"],
      ["wind_down", "/wsc", "p1"],
    ]);
    const ack = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: w.heartbeatBody(owner, { acks: told.map((m) => m.msgId) }),
    });
    expect(ack.status).toBe(200);
    expect(await messagesOf(owner)).toEqual([]);
    // Clear both fences again (the owner's scope), for the second half.
    expect(await windDown(await op(), { namespace: "/wsc", env: "canary", id: "c1", deadline: null })).toEqual({
      status: 200,
      body: { queued: true },
    });
    expect(await windDown(await op(), { namespace: "/wsc", env: "prod", id: "p1", deadline: null })).toEqual({
      status: 200,
      body: { queued: true },
    });

    // The owner goes away: its record is dropped, its rows stay.
    const gone = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: owner } });
    expect(gone.status).toBe(200);
    expect(await gone.json()).toEqual({});

    // Now the row's hostname decides: own.example's operator is out, row.example's in.
    before = await t.snapshot();
    expect(await windDown(ownHost, { namespace: "/wsc", env: "canary", id: "c1", deadline: 60 })).toEqual({
      status: 403,
      body: { error: "forbidden" },
    });
    expect(await windDown(ownHost, { namespace: "/wsc", env: "canary", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: 0 },
    });
    expect(await t.snapshot()).toEqual(before);
    const stampedAt = await t.redis.timeMs();
    expect(await windDown(rowHost, { namespace: "/wsc", env: "canary", id: "c1", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: false },
    });
    const c1 = (await getRow(t, "/wsc", "c1", "canary"))!;
    expect(c1).toEqual(fencedRow(owner, "30", "row.example", ""));
    expect(Number(c1.expiry)).toBeGreaterThanOrEqual(stampedAt + 60_000);
    // … and the env is the hash's (the request's): prod's operator reaches the prod row now.
    expect(await windDown(prodOnly, { namespace: "/wsc", env: "prod", deadline: 60 })).toEqual({
      status: 200,
      body: { queued: 0 },
    });
    expect((await getRow(t, "/wsc", "p1", "prod"))!.expiry).toMatch(/^\d+$/);
  });
});

describe("the fence outlives its owner; the owner tag survives the wind-down, not the re-placement", () => {
  it("a client request re-places the fenced id and the replacement owner's heartbeat carries the wind_down", async () => {
    const first = await register({ hostname: "f.example", env: "fenv", namespaces: ["/wdf"] });
    await endColdStart(t);
    const placed = await pb.call("GET", "/wdf/doc", { headers: { host: "f.example" } });
    expect(placed.status).toBe(200);
    expect(await placed.json()).toEqual({ served: "/wdf/doc" });
    const row = (await getRow(t, "/wdf", "doc", "fenv"))!;
    expect(row).toEqual({
      sessionId: first,
      epoch: expect.stringMatching(/^\d+$/),
      expiry: "",
      hostname: "f.example",
      tag: "",
    });
    const second = await register({ hostname: "f.example", env: "fenv", namespaces: ["/wdf"] });

    // The owner tags its placement (compare-and-set on its session and the epoch).
    const tag = async (sessionId: string, epoch: string) =>
      post("/registry/tag", token, { sessionId, namespace: "/wdf", id: "doc", epoch, tag: "ws:W" });
    expect(await tag(first, row.epoch!)).toEqual({ status: 200, body: { tagged: true } });
    const tagged = async () => {
      const res = await pb.call("GET", "/registry/overview?ns=/wdf&tag=ws:W", { token: await op() });
      expect(res.status).toBe(200);
      return ((await res.json()) as { namespaces: Array<{ entries: unknown[] }> }).namespaces.flatMap((g) => g.entries);
    };

    // Stamped, cleared, stamped again: the tag stays through every wind-down.
    const at = await t.redis.timeMs();
    expect(await windDown(await op(), { namespace: "/wdf", env: "fenv", id: "doc", deadline: 600 })).toEqual({
      status: 200,
      body: { queued: true },
    });
    expect(await getRow(t, "/wdf", "doc", "fenv")).toEqual({
      ...row,
      expiry: expect.stringMatching(/^\d+$/),
      tag: "ws:W",
    });
    expect(await windDown(await op(), { namespace: "/wdf", env: "fenv", id: "doc", deadline: null })).toEqual({
      status: 200,
      body: { queued: true },
    });
    expect(await getRow(t, "/wdf", "doc", "fenv")).toEqual({ ...row, expiry: "", tag: "ws:W" });
    expect(await windDown(await op(), { namespace: "/wdf", env: "fenv", deadline: 600 })).toEqual({
      status: 200,
      body: { queued: 1 },
    });
    const fenced = (await getRow(t, "/wdf", "doc", "fenv"))!;
    expect(fenced).toEqual({ ...row, expiry: expect.stringMatching(/^\d+$/), tag: "ws:W" });
    const fence = Number(fenced.expiry);
    expect(fence).toBeGreaterThanOrEqual(at + 600_000);
    expect(await tagged()).toEqual([{ id: "doc", sessionId: first, expiry: fence, tag: "ws:W" }]);
    // The owner is told (the queue keeps the latest order per id): the last fence, in seconds.
    const orders = await messagesOf(first);
    expect(orders).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/wdf", id: "doc", deadline: expect.any(Number) },
    ]);
    expect(orders[0]!.deadline).toBeGreaterThan(600 - 60);
    expect(await messagesOf(second)).toEqual([]);

    // The owner goes away before winding the instance down. The next request re-places the id
    // on the other worker: a new epoch, the fence kept, the tag gone.
    const gone = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: first } });
    expect(gone.status).toBe(200);
    const replaced = await pb.call("GET", "/wdf/doc", { headers: { host: "f.example" } });
    expect(replaced.status).toBe(200);
    expect(await replaced.json()).toEqual({ served: "/wdf/doc" });
    const now = (await getRow(t, "/wdf", "doc", "fenv"))!;
    expect(now).toEqual({
      sessionId: second,
      epoch: expect.stringMatching(/^\d+$/),
      expiry: String(fence),
      hostname: "f.example",
      tag: "",
    });
    expect(BigInt(now.epoch!)).toBeGreaterThan(BigInt(row.epoch!));
    expect(await tagged()).toEqual([]);
    // The old owner's tag cannot be written back on the new placement.
    expect(await tag(second, row.epoch!)).toEqual({ status: 200, body: { tagged: false } });

    // The replacement owner is told (queued right after the placement): a wind_down whose
    // deadline is what is left of the fence, in seconds.
    const messages = await until(async () => {
      const m = await messagesOf(second);
      return m.length > 0 ? m : null;
    }, 10_000);
    expect(messages).toEqual([
      { msgId: expect.any(String), type: "wind_down", ns: "/wdf", id: "doc", deadline: expect.any(Number) },
    ]);
    expect(messages[0]!.deadline).toBeGreaterThan(600 - 60);
    expect(messages[0]!.deadline).toBeLessThanOrEqual(600);
  });
});

describe("drain and undrain in hostname-aware mode", () => {
  it("judge the credential's hostnames and envs against the client's registration: 403 forbidden and nothing written otherwise", async () => {
    const clientId = "drain-scope-client";
    await register({ clientId, hostname: "a.example", env: "prod", namespaces: ["/dscope"] });
    const forbidden = { status: 403, body: { error: "forbidden" } };
    for (const claim of [
      { hostnames: ["b.example"] },
      { envs: ["staging"] },
      { hostnames: ["a.example"], envs: ["staging"] },
    ]) {
      const tok = await op(claim);
      expect(await post("/registry/drain", tok, { clientId, deadline: null })).toEqual(forbidden);
      expect(await post("/registry/undrain", tok, { clientId })).toEqual(forbidden);
    }
    const allowed = await op({ hostnames: ["a.example"], envs: ["prod"] });
    // No refused drain left a mark: there is nothing to revoke yet.
    expect(await post("/registry/undrain", allowed, { clientId })).toEqual({ status: 200, body: { revoked: false } });
    expect(await post("/registry/drain", allowed, { clientId, deadline: null })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await post("/registry/undrain", allowed, { clientId })).toEqual({ status: 200, body: { revoked: true } });
  });
});
