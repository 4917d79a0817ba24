import type { Hono } from "hono";
import { beforeEach, describe, expect, it } from "vitest";
import { createPinboard } from "../../src/app/app.ts";
import { routeNamespaces } from "../../src/app/own-routes.ts";
import { RESERVED_NAMESPACES } from "../../src/contract/names.ts";
import type { AppEnv } from "../../src/deps/app-deps.ts";
import { Keys } from "../../src/redis/keys.ts";
import { sha256, sha256Head } from "../../src/redis/sha256.ts";
import { cloudflarePeer } from "../../src/runtime/cloudflare/isolate.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { changedKeys, keyspaceDigest } from "../support/keyspace.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * Limits on what a register (and a heartbeat) may ask of Pinboard: how many instance ids and
 * namespaces, how weak a secret, how large a headroom, which namespace names.
 */

let t: TestRedis;
let pb: TestPinboard;
let worker: ChallengeServer;
let token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));
beforeEach(() => {
  worker.mode = "answer";
});

const SESSIONS = "pinboard:{global}:sessions";

/** Sends a register the field rules must refuse: the exact 400, no probe, no Redis key touched. */
async function refused(body: Record<string, unknown>, error: string, to: ChallengeServer = worker): Promise<void> {
  const before = await keyspaceDigest(t);
  const probes = to.seen.length;
  const res = await pb.call("POST", "/registry/register", { token, body });
  expect(res.status).toBe(400);
  expect(await res.json()).toEqual({ error });
  expect(to.seen.length).toBe(probes);
  expect(changedKeys(before, await keyspaceDigest(t))).toEqual([]);
}

const ids = (prefix: string, count: number) => Array.from({ length: count }, (_, i) => `${prefix}-${i}`);

describe("instances: at most 100000 ids per register", () => {
  it("refuses 100001 ids across namespaces, or in one, with 400 before any Redis work", async () => {
    const namespaces = ["/threads", "/rooms"];
    await refused(
      registerBody(worker, { namespaces, instances: { "/threads": ids("t", 60_000), "/rooms": ids("r", 40_001) } }),
      "too many instances: at most 100000 ids",
    );
    await refused(
      registerBody(worker, { instances: { "/threads": ids("t", 100_001) } }),
      "too many instances: at most 100000 ids",
    );
    // Repeats count as sent.
    await refused(
      registerBody(worker, { instances: { "/threads": Array.from({ length: 100_001 }, () => "same") } }),
      "too many instances: at most 100000 ids",
    );
  });

  it("completes a register naming 50000 ids: rows of the previous session re-bind, the rest are duplicates", async () => {
    const clientId = "many-ids";
    const first = await registerOk(pb, token, registerBody(worker, { clientId }));
    const offered = ids("bulk", 50_000);
    for (const id of offered.slice(0, 3)) await putRow(t, "/threads", id, { sessionId: first.sessionId, epoch: "900" });
    const second = await registerOk(
      pb,
      token,
      registerBody(worker, { clientId, prevSessionId: first.sessionId, instances: { "/threads": offered } }),
    );
    expect(second.duplicates).toHaveLength(49_997);
    expect(new Set(second.duplicates!.map((d) => d.id))).toEqual(new Set(offered.slice(3)));
    expect(second.duplicates!.every((d) => d.ns === "/threads")).toBe(true);
    for (const id of offered.slice(0, 3))
      expect(await getRow(t, "/threads", id)).toEqual({
        sessionId: second.sessionId,
        epoch: "900",
        expiry: "",
        hostname: "",
        tag: "",
      });
  });

  it("buckets ids by the spec's sha256 (the synchronous hash agrees with Web Crypto)", async () => {
    const enc = new TextEncoder();
    const samples = [
      "",
      "abc",
      "victim-1",
      "a".repeat(55),
      "a".repeat(56),
      "a".repeat(64),
      "a".repeat(256),
      "é😀\u0000",
      "x".repeat(2000),
    ];
    for (let i = 0; i < 500; i++) samples.push(`id-${i}-${"~._-".repeat(i % 70)}`);
    const keys = new Keys("pinboard:", 16);
    for (const s of samples) {
      const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", enc.encode(s)));
      expect(sha256(enc.encode(s))).toEqual(digest);
      const head = new DataView(digest.buffer).getUint32(0);
      expect(sha256Head(s)).toBe(head);
      expect(keys.bucketOf(s)).toBe(head % 16);
    }
  });
});

describe("namespaces: at most 256 per register", () => {
  const names = (count: number) => Array.from({ length: count }, (_, i) => `/wide-${i}`);

  it("refuses 257 with the schema's 400 before the probe, touching no Redis key", async () => {
    const expected = (await (await pb.call("POST", "/registry/register", { token, body: {} })).json()) as {
      error: string;
    };
    expect(expected.error).toMatch(/^expected \{clientId: string, secret: string, namespaces: string\[\]/);
    await refused(registerBody(worker, { namespaces: names(257) }), expected.error);
  });

  it("registers 256, mirrored into every bucket's namespace lists", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: names(256) }));
    expect(JSON.parse((await t.redis.hget(SESSIONS, sessionId))!).namespaces).toHaveLength(256);
    for (const b of [0, 15]) expect(await t.redis.hget(`pinboard:{${b}}:nsw:/wide-255`, sessionId)).not.toBeNull();
  });
});

describe("secret: at least 16 characters", () => {
  it("refuses a shorter secret with 400 naming the field, before the probe (of a worker that holds that secret)", async () => {
    for (const secret of ["s", "fifteen-chars-x", "😀".repeat(15)]) {
      const w = await startChallengeServer(secret);
      try {
        await refused(registerBody(w), "secret too short: at least 16 characters", w);
      } finally {
        await w.close();
      }
    }
  });

  it("accepts 16 characters", async () => {
    for (const secret of ["sixteen-chars-xx", "é".repeat(16)]) {
      const w = await startChallengeServer(secret);
      try {
        const { sessionId } = await registerOk(pb, token, registerBody(w));
        const stored = JSON.parse((await t.redis.hget(SESSIONS, sessionId))!).secret as string;
        expect(stored).not.toContain(secret);
        expect(await pb.deps.secrets.open(sessionId, stored)).toBe(secret);
      } finally {
        await w.close();
      }
    }
  });
});

describe("headroom: any finite number ≥ 0, stored clamped to 0 … 1000000", () => {
  const listEntry = async (sessionId: string, b: number) =>
    (await t.redis.hget(`pinboard:{${b}}:nsw:/clamp`, sessionId))!.split("\n")[1];
  const summarySum = async (b: number) => t.redis.hget(`pinboard:{${b}}:nss:/clamp`, "sum");

  it("register and heartbeat store 1e300 as 1000000, and a co-tenant's leaving leaves the namespace total intact", async () => {
    const huge = await registerOk(pb, token, registerBody(worker, { namespaces: ["/clamp"], headroom: 1e300 }));
    const small = await registerOk(pb, token, registerBody(worker, { namespaces: ["/clamp"], headroom: 10 }));
    expect(JSON.parse((await t.redis.hget(SESSIONS, huge.sessionId))!).headroom).toBe(1_000_000);
    for (const b of [0, 7, 15]) {
      expect(await listEntry(huge.sessionId, b)).toBe("1000000");
      expect(await summarySum(b)).toBe("1000010");
    }

    const hb = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: heartbeatBody(worker, small.sessionId, { headroom: 1e300 }),
    });
    expect(hb.status).toBe(200);
    expect(await hb.json()).toEqual({ expiresInMs: 15000, draining: false });
    expect(JSON.parse((await t.redis.hget(SESSIONS, small.sessionId))!).headroom).toBe(1_000_000);
    expect(await listEntry(small.sessionId, 3)).toBe("1000000");
    const back = await pb.call("POST", "/registry/heartbeat", {
      token,
      body: heartbeatBody(worker, small.sessionId, { headroom: 10 }),
    });
    expect(back.status).toBe(200);

    // The huge worker leaves: the total goes back to the other's 10 (an unclamped 1e300 took
    // every co-tenant's headroom with it: 1e300 + 10 - 1e300 = 0).
    const res = await pb.call("POST", "/registry/deregister", { token, body: { sessionId: huge.sessionId } });
    expect(res.status).toBe(200);
    for (const b of [0, 7, 15]) expect(await summarySum(b)).toBe("10");
  });

  it("stores values in range as sent", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { headroom: 0.5 }));
    expect(JSON.parse((await t.redis.hget(SESSIONS, sessionId))!).headroom).toBe(0.5);
  });

  it("still refuses a negative or infinite headroom with the schema's 400", async () => {
    const expected = (await (
      await pb.call("POST", "/registry/register", { token, body: { headroom: -1 } })
    ).json()) as { error: string };
    expect(expected.error).toMatch(/^expected \{clientId: string, secret: string/);
    await refused(registerBody(worker, { headroom: -1 }), expected.error);
    const before = await keyspaceDigest(t);
    const raw = JSON.stringify(registerBody(worker)).replace(/"headroom":100/, '"headroom":1e999');
    const res = await pb.call("POST", "/registry/register", {
      token,
      raw,
      headers: { "content-type": "application/json" },
    });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual(expected);
    expect(changedKeys(before, await keyspaceDigest(t))).toEqual([]);
  });
});

describe("namespaces that shadow Pinboard's routes", () => {
  // /console and /openapi.json too: a worker page there would share the console's origin and
  // path, and could register a service worker over the console (and read its credential).
  for (const ns of ["/registry", "/_pinned", "/healthz", "/readyz", "/metrics", "/console", "/openapi.json"]) {
    it(`refuses ${ns} with 400 reserved namespace`, async () => {
      await refused(registerBody(worker, { namespaces: ["/threads", ns] }), `reserved namespace: ${ns}`);
    });
  }

  it("reserves the first segment of every route the app mounts, or the app is not built", () => {
    const paths = (app: { routes: Array<{ path: string }> }) => app.routes.map((r) => r.path);
    const metrics = (root: Hono<AppEnv>) => void root.get("/metrics", (c) => c.text(""));
    const whole = createPinboard(pb.deps, { peerAddress: cloudflarePeer, rootRoutes: metrics });
    // The same first segments on the one listener as on the admin listener apart.
    const mounted = ["/console", "/healthz", "/metrics", "/openapi.json", "/readyz", "/registry"];
    expect(routeNamespaces(paths(whole.app))).toEqual(mounted);
    const apart = createPinboard(pb.deps, { peerAddress: cloudflarePeer, rootRoutes: metrics, separateAdmin: true });
    expect(routeNamespaces(paths(apart.app))).toEqual(["/healthz", "/readyz"]);
    expect(routeNamespaces(paths(apart.admin!))).toEqual(mounted);
    for (const ns of [...routeNamespaces(paths(whole.app)), "/_pinned"]) expect(RESERVED_NAMESPACES.has(ns)).toBe(true);

    const status = (root: Hono<AppEnv>) => void root.get("/status/now", (c) => c.text(""));
    const refusal =
      "Pinboard's own routes under /status are not reserved namespaces: add them to RESERVED_NAMESPACES in src/contract/names.ts";
    expect(() => createPinboard(pb.deps, { peerAddress: cloudflarePeer, rootRoutes: status })).toThrow(refusal);
    expect(() =>
      createPinboard(pb.deps, { peerAddress: cloudflarePeer, rootRoutes: status, separateAdmin: true }),
    ).toThrow(refusal);
  });

  it("refuses the dot segments /. and /.. with 400 invalid namespace", async () => {
    await refused(registerBody(worker, { namespaces: ["/threads", "/."] }), "invalid namespace: /.");
    await refused(registerBody(worker, { namespaces: ["/.."] }), "invalid namespace: /..");
  });

  it("allows names that only resemble them", async () => {
    const { sessionId } = await registerOk(
      pb,
      token,
      registerBody(worker, { namespaces: ["/registry2", "/metrics-v1", "/pinned", "/...", "/.x", "/console2"] }),
    );
    expect(JSON.parse((await t.redis.hget(SESSIONS, sessionId))!).namespaces).toEqual([
      "/registry2",
      "/metrics-v1",
      "/pinned",
      "/...",
      "/.x",
      "/console2",
    ]);
  });
});
