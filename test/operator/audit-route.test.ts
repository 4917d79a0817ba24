import { describe, expect, it } from "vitest";
import { sweepNow } from "../../src/cli/sweep-now.ts";
import type { Logger } from "../../src/log/logger.ts";
import { readTrail, streamIds } from "../support/audit-trail.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { keyspaceDigest } from "../support/keyspace.ts";
import { credential, TEST_PASSPORT_SECRET, type TestPinboard } from "../support/pinboard-app.ts";
import { redisTargetEnv, type TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * GET /registry/audit: the query's checks, paging newest first by `before`, the credential's
 * scope, the cap, and recording that never fails the action it records.
 */

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
let pinboards: Record<"capped" | "paged" | "broken", TestPinboard>;
useRegistryFixture({}, (f) => ({ t, pb, worker, token, pinboards } = f), {
  pinboards: {
    capped: { PINBOARD_PREFIX: "capped:", PINBOARD_AUDIT_MAX_ENTRIES: "10" },
    paged: { PINBOARD_PREFIX: "paged:" },
    broken: { PINBOARD_PREFIX: "broken:" },
  },
});

const op = (claim = {}) => credential("pinboard:operator", claim, { sub: "ops" });
const call = async (on: TestPinboard, method: "GET" | "POST", path: string, tok: string, body?: unknown) => {
  const res = await on.call(method, path, { token: tok, ...(body !== undefined ? { body } : {}) });
  return { status: res.status, body: (await res.json()) as unknown };
};
const register = async (on: TestPinboard, ns: string[], clientId: string) =>
  (await registerOk(on, token, registerBody(worker, { namespaces: ns, clientId }))).sessionId;

describe("GET /registry/audit: the query", () => {
  it("refuses a bad limit, before, kind or type with its exact error, and changes nothing", async () => {
    await register(pb, ["/q"], "client-q");
    const tok = await op();
    const before = await keyspaceDigest(t);
    const cases: Array<[string, string]> = [
      ["?limit=0", "invalid limit"],
      ["?limit=501", "invalid limit"],
      ["?limit=-1", "invalid limit"],
      ["?limit=1.5", "invalid limit"],
      ["?limit=ten", "invalid limit"],
      ["?limit=", "invalid limit"],
      ["?before=abc", "invalid before"],
      ["?before=1-", "invalid before"],
      ["?before=", "invalid before"],
      ["?kind=actions", "invalid kind"],
      ["?kind=", "invalid kind"],
      ["?type=drained", "invalid type"],
      ["?type=worker.dead", "invalid type"],
      ["?limit=5&kind=both", "invalid kind"],
    ];
    for (const [query, error] of cases) {
      expect(await call(pb, "GET", `/registry/audit${query}`, tok), query).toEqual({ status: 400, body: { error } });
    }
    expect(await keyspaceDigest(t)).toEqual(before);
  });

  it("needs the operator scope", async () => {
    expect(await call(pb, "GET", "/registry/audit", token)).toEqual({ status: 403, body: { error: "forbidden" } });
    expect((await pb.call("GET", "/registry/audit")).status).toBe(401);
  });
});

describe("GET /registry/audit: paging", () => {
  it("pages newest first by `before`; the last page has no cursor; kind and type filter", async () => {
    const paged = pinboards.paged;
    await register(paged, ["/p"], "client-p");
    for (let i = 0; i < 4; i++)
      expect((await call(paged, "POST", "/registry/undrain", await op(), { clientId: "client-p" })).status).toBe(200);
    const tok = await op();
    const ids = await streamIds(t, "paged:{global}:audit");
    expect(ids).toHaveLength(5);

    const first = await readTrail(paged, tok, "?limit=2");
    expect(first.entries.map((e) => e.id)).toEqual(ids.slice(0, 2));
    expect(first.cursor).toBe(ids[1]);
    const second = await readTrail(paged, tok, `?limit=2&before=${first.cursor}`);
    expect(second.entries.map((e) => e.id)).toEqual(ids.slice(2, 4));
    const last = await readTrail(paged, tok, `?limit=2&before=${second.cursor}`);
    expect(last).toEqual({ entries: [expect.objectContaining({ id: ids[4], type: "worker.registered" })] });

    expect((await readTrail(paged, tok, "?limit=5")).cursor).toBeUndefined();
    expect((await readTrail(paged, tok)).entries.map((e) => e.id)).toEqual(ids);
    expect((await readTrail(paged, tok, "?limit=4")).cursor).toBe(ids[3]);
    expect((await readTrail(paged, tok, `?before=${ids[4]}`)).entries).toEqual([]);

    const events = await readTrail(paged, tok, "?kind=event");
    expect(events.entries.map((e) => e.type)).toEqual(["worker.registered"]);
    expect((await readTrail(paged, tok, "?type=undrain")).entries.map((e) => e.id)).toEqual(ids.slice(0, 4));
    expect((await readTrail(paged, tok, "?kind=event&type=undrain")).entries).toEqual([]);
  });
});

describe("GET /registry/audit: scope", () => {
  it("a credential for /a never sees /b's entries nor a sweep; a worker of both shows as /a's", async () => {
    await register(pb, ["/a"], "client-a");
    await register(pb, ["/b"], "client-b");
    await register(pb, ["/a", "/b"], "client-ab");
    const all = await op();
    expect((await call(pb, "POST", "/registry/drain", all, { clientId: "client-b", deadline: null })).status).toBe(200);
    expect((await call(pb, "POST", "/registry/wind_down", all, { namespace: "/b", deadline: 0 })).status).toBe(200);
    expect((await call(pb, "POST", "/registry/drain", all, { clientId: "client-a", deadline: null })).status).toBe(200);
    const swept = await sweepNow({
      ...redisTargetEnv(t),
      PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
      PINBOARD_LOG_LEVEL: "silent",
    });
    expect(swept.report.ran).toBe(true);

    const everything = (await readTrail(pb, all, "?limit=500")).entries;
    expect(everything.some((e) => e.type === "sweep")).toBe(true);
    expect(everything.some((e) => e.target.clientId === "client-b")).toBe(true);
    expect(everything.some((e) => e.target.namespace === "/b")).toBe(true);

    const narrow = (await readTrail(pb, await op({ namespaces: ["/a"] }), "?limit=500")).entries;
    for (const e of narrow) {
      const namespaces = e.target.namespace !== undefined ? [e.target.namespace] : (e.target.namespaces ?? []);
      expect(namespaces, JSON.stringify(e)).toEqual(["/a"]);
    }
    expect(narrow.some((e) => e.type === "drain" && e.target.clientId === "client-a")).toBe(true);
    expect(
      narrow.find((e) => e.type === "worker.registered" && e.target.clientId === "client-ab")?.target.namespaces,
    ).toEqual(["/a"]);
    expect(narrow.filter((e) => e.type === "sweep" || e.target.clientId === "client-b")).toEqual([]);
  });
});

describe("the cap (PINBOARD_AUDIT_MAX_ENTRIES)", () => {
  it("keeps the newest entries and drops the oldest, by whole stream nodes (MAXLEN ~)", async () => {
    const capped = pinboards.capped;
    const KEY = "capped:{global}:audit";
    await register(capped, ["/c"], "client-c");
    const undrain = async () =>
      expect((await call(capped, "POST", "/registry/undrain", await op(), { clientId: "client-c" })).status).toBe(200);
    for (let i = 0; i < 150; i++) await undrain();
    const length = await t.redis.client.xlen(KEY);
    // At least the cap; at most the cap and one stream node (stream-node-max-entries, 100 by default).
    expect(length).toBeGreaterThanOrEqual(10);
    expect(length).toBeLessThanOrEqual(10 + 100);
    expect(length).toBeLessThan(151);
    // The registration came first: it is long gone.
    expect((await readTrail(capped, await op(), "?type=worker.registered")).entries).toEqual([]);

    // With small nodes the trail stays within a node of the cap.
    const nodeSize = async (entries: string) => {
      for (const node of await t.primaries()) await node.config("SET", "stream-node-max-entries", entries);
    };
    await nodeSize("4");
    for (let i = 0; i < 60; i++) await undrain();
    expect(await t.redis.client.xlen(KEY)).toBeLessThanOrEqual(10 + 4);
    const page = await readTrail(capped, await op(), "?limit=500");
    expect(page.entries.length).toBeGreaterThanOrEqual(10);
    expect(page.entries.map((e) => e.id)).toEqual(await streamIds(t, KEY));
    await nodeSize("100");
  });
});

describe("recording never fails the action", () => {
  it("with the trail's key broken every action and registration answers as before, and the failure is logged", async () => {
    const broken = pinboards.broken;
    const warnings: Array<{ message: string; fields?: Record<string, unknown> }> = [];
    const log: Logger = {
      debug: () => {},
      info: () => {},
      error: () => {},
      warn: (message, fields) => warnings.push({ message, ...(fields ? { fields } : {}) }),
    };
    broken.deps.log = log;
    await t.redis.client.set("broken:{global}:audit", "not a stream");

    const dead = await register(broken, ["/x"], "client-dead");
    // Its lease ran out long ago: the next register prunes it, recording worker.died under pcall.
    const record = JSON.parse((await t.redis.hget("broken:{global}:sessions", dead))!) as { expiry: number };
    const expiry = record.expiry - 100_000;
    await t.redis.client.hset("broken:{global}:sessions", dead, JSON.stringify({ ...record, expiry }));
    await t.redis.client.zadd("broken:{global}:session-expiries", expiry, dead);
    const live = await register(broken, ["/x"], "client-live");
    expect(await t.redis.hget("broken:{global}:sessions", dead)).toBeNull();

    const tok = await op();
    expect(await call(broken, "POST", "/registry/drain", tok, { clientId: "client-live", deadline: 5 })).toEqual({
      status: 200,
      body: { drained: true },
    });
    expect(await call(broken, "POST", "/registry/undrain", tok, { clientId: "client-live" })).toEqual({
      status: 200,
      body: { revoked: true },
    });
    expect(await call(broken, "POST", "/registry/wind_down", tok, { namespace: "/x", deadline: 0 })).toEqual({
      status: 200,
      body: { queued: 0 },
    });
    expect(await call(broken, "POST", "/registry/deregister", token, { sessionId: live })).toEqual({
      status: 200,
      body: {},
    });
    expect(await t.redis.get("broken:{global}:audit")).toBe("not a stream");
    const failed = warnings.filter((w) => w.message === "audit append failed").map((w) => w.fields?.type);
    expect(failed).toEqual([
      "worker.registered",
      "worker.registered",
      "drain",
      "undrain",
      "wind_down",
      "worker.deregistered",
    ]);
    expect(String(warnings[0]?.fields?.error)).toMatch(/WRONGTYPE/);
  });
});
