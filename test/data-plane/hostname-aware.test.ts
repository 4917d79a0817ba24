import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { WorkerOptions } from "../../src/pinned/index.ts";
import { Keys } from "../../src/redis/keys.ts";
import { Echo, type EchoAnswer } from "../support/echo-instance.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { heartbeatTap } from "../support/heartbeat-tap.ts";
import { memoryLogger, until } from "../support/local-worker.ts";
import { startTestPinboard } from "../support/pinboard-app.ts";
import { type RawResponse, rawRequest } from "../support/raw-http.ts";
import { getRow, putRow } from "../support/rows.ts";

/**
 * Hostname-aware mode on the Node entry: the Host header names the hostname, the (hostname, ns)
 * binding the env, the env binding the takeover. A short lease (6 s) keeps the quarantine and
 * wind-down waits short; workers heartbeat every 2 s.
 */

const LEASE = 6000;
/** One lease in whole seconds, rounded up: the longest window a refusal's Retry-After can name. */
const LEASE_S = Math.ceil(LEASE / 1000);
const keys = new Keys("pinboard:", 16);
let fleet: Fleet;

const named = async (hostname: string, extra: Partial<WorkerOptions> = {}): Promise<FleetWorker> =>
  fleet.addWorker({ hostname, ...extra });

beforeAll(async () => {
  fleet = await startFleet({
    workers: 0,
    env: { PINBOARD_HOSTNAME_AWARE: "true", PINBOARD_LEASE_TTL_MS: String(LEASE) },
  });
  await fleet.skipColdStart();
});
afterAll(() => fleet?.close());

const via = (host: string, path: string, options: { method?: string; body?: string } = {}) =>
  rawRequest(`${fleet.pb.url}${path}`, { ...options, headers: { host } });
const json = (res: RawResponse) => JSON.parse(res.body) as EchoAnswer;

function expectRefusal(res: RawResponse, status: number, error: string, retryAfter?: string): void {
  expect(res.status).toBe(status);
  expect(res.headers["content-type"]).toMatch(/^application\/json/);
  expect(JSON.parse(res.body)).toEqual({ error });
  if (status === 503) {
    // Every 503 refusal carries Retry-After: max(1, ceil(remaining / 1000)) whole seconds, and no
    // window (cold start, binding quarantine, takeover fence) outlasts one lease.
    expect(res.headers["retry-after"], error).toMatch(/^[1-9][0-9]*$/);
    expect(Number(res.headers["retry-after"]), error).toBeGreaterThanOrEqual(1);
    expect(Number(res.headers["retry-after"]), error).toBeLessThanOrEqual(LEASE_S);
  }
  if (retryAfter !== undefined) expect(res.headers["retry-after"]).toBe(retryAfter);
}

/** Retry-After as the contract computes it, max(1, ceil(remaining / 1000)), for a window ending at `untilMs`. */
const retryAfterFor = (untilMs: number, nowMs: number) => Math.max(1, Math.ceil((untilMs - nowMs) / 1000));

/** Sends raw bytes and returns the raw answer (for requests node:http will not make). */
function rawExchange(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(fleet.pb.port, "127.0.0.1", () => socket.write(text));
    let out = "";
    socket.setEncoding("utf8");
    socket.on("data", (d: string) => (out += d));
    socket.on("end", () => resolve(out));
    socket.on("error", reject);
  });
}

describe("the Host header", () => {
  let alpha: FleetWorker;
  let beta: FleetWorker;
  beforeAll(async () => {
    alpha = await named("alpha.example");
    beta = await named("beta.example");
  });

  it("routes by hostname, with the port stripped and the name lowercased", async () => {
    const a = await via("ALPHA.Example:8080", "/echo/doc");
    expect(a.status).toBe(200);
    expect(json(a).attestation.aud).toBe(alpha.worker.sessionId);
    const b = await via("beta.example", "/echo/doc");
    expect(b.status).toBe(200);
    expect(json(b).attestation.aud).toBe(beta.worker.sessionId);
    // One id, two envs (env defaults to the hostname): two independent placements.
    expect(await getRow(fleet.t, "/echo", "doc", "alpha.example")).toMatchObject({
      sessionId: alpha.worker.sessionId,
      hostname: "alpha.example",
    });
    expect(await getRow(fleet.t, "/echo", "doc", "beta.example")).toMatchObject({
      sessionId: beta.worker.sessionId,
      hostname: "beta.example",
    });
    const again = await via("alpha.example", "/echo/doc");
    expect(json(again)).toMatchObject({ epoch: json(a).epoch, hits: 2 });
  });

  it("routes an absolute-form target by its own authority, not by Host (RFC 9112 §3.2.2), and names it in X-Forwarded-Host", async () => {
    const answer = await rawExchange(
      "GET http://beta.example/echo/absolute HTTP/1.1\r\nHost: alpha.example\r\nConnection: close\r\n\r\n",
    );
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    const body = JSON.parse(
      answer.slice(answer.indexOf("\r\n\r\n") + 4).replace(/^[0-9a-f]+\r\n|\r\n0\r\n\r\n$/g, ""),
    ) as EchoAnswer;
    expect(body.attestation.aud).toBe(beta.worker.sessionId);
    expect(await getRow(fleet.t, "/echo", "absolute", "beta.example")).toMatchObject({
      sessionId: beta.worker.sessionId,
    });
    expect(await getRow(fleet.t, "/echo", "absolute", "alpha.example")).toBeNull();
  });

  it("400 missing Host header (no Host over HTTP/1.0 or HTTP/1.1, or an empty Host)", async () => {
    for (const request of [
      "GET /echo/doc HTTP/1.0\r\n\r\n",
      "GET /echo/doc HTTP/1.1\r\nConnection: close\r\n\r\n",
      "GET /echo/doc HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n",
    ]) {
      const answer = await rawExchange(request);
      expect(answer, request).toMatch(/^HTTP\/1\.1 400 /);
      expect(answer.slice(answer.indexOf("\r\n\r\n") + 4)).toBe('{"error":"missing Host header"}');
    }
  });

  it("400 missing Host header through the app itself (a Request without Host)", async () => {
    const node = await startTestPinboard(fleet.t, {
      PINBOARD_HOSTNAME_AWARE: "true",
      PINBOARD_LEASE_TTL_MS: String(LEASE),
    });
    try {
      const res = await node.app.request(new Request("http://pinboard.internal/echo/doc"));
      expect(res.status).toBe(400);
      expect(await res.json()).toEqual({ error: "missing Host header" });
    } finally {
      await node.close();
    }
  });

  it("503 no live workers for hostname: no binding, or no candidate left", async () => {
    expectRefusal(await via("nobody.example", "/echo/doc"), 503, "no live workers for hostname", "1");
    const idle = await named("idle.example");
    expect((await via("idle.example", "/echo/held")).status).toBe(200);
    await idle.worker.drain();
    expectRefusal(await via("idle.example", "/echo/new"), 503, "no live workers for hostname", "1");
    // An existing placement on the draining worker still routes.
    expect((await via("idle.example", "/echo/held")).status).toBe(200);
  });
});

describe("binding quarantine", () => {
  it("after a displacement, new placements in (hostname, ns) wait one lease; ids with a row bypass", async () => {
    const blue = await named("gamma.example", { env: "gamma-blue", bindingEpoch: 1 });
    const blueSid = blue.worker.sessionId!;
    expect((await via("gamma.example", "/echo/early")).status).toBe(200);
    const green = await named("gamma.example", { env: "gamma-green", bindingEpoch: 2 });
    const untilMs = Number(await fleet.t.redis.hget(keys.bindingQuarantine, "gamma.example/echo"));
    expect(untilMs).toBeGreaterThan(Date.now());

    const before = await fleet.t.redis.timeMs();
    const res = await via("gamma.example", "/echo/fresh");
    const after = await fleet.t.redis.timeMs();
    expectRefusal(res, 503, "hostname binding displaced, retry");
    // The quarantine's remaining window, as Redis' clock saw it between the request's send and its answer.
    const retryAfter = Number(res.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(retryAfterFor(untilMs, after));
    expect(retryAfter).toBeLessThanOrEqual(retryAfterFor(untilMs, before));
    expect(retryAfter).toBeGreaterThanOrEqual(4);
    expect(await getRow(fleet.t, "/echo", "fresh", "gamma-green")).toBeNull();

    // An id that has a placement row in the new env is not quarantined.
    await putRow(
      fleet.t,
      "/echo",
      "rowed",
      { sessionId: green.worker.sessionId!, epoch: "1000", hostname: "gamma.example" },
      "gamma-green",
    );
    const rowed = await via("gamma.example", "/echo/rowed");
    expect(rowed.status).toBe(200);
    expect(json(rowed)).toMatchObject({ epoch: "1000", attestation: { aud: green.worker.sessionId } });

    // The displaced worker is superseded at its next heartbeat (within the window) and leaves the
    // (hostname, ns) list. Once that happened and the window has passed (rewritten rather than
    // waited for), new placements go ahead on the new env's worker.
    const listed = async () => {
      for (const b of keys.allBuckets())
        if ((await fleet.t.redis.hget(keys.nsWorkers(b, "gamma.example", "/echo"), blueSid)) !== null) return true;
      return false;
    };
    await until(
      async () => (await fleet.t.redis.hget(keys.sessions, blueSid)) === null && !(await listed()),
      10_000,
      50,
    );
    await fleet.t.redis.client.hset(
      keys.bindingQuarantine,
      "gamma.example/echo",
      String((await fleet.t.redis.timeMs()) - 1),
    );
    const later = await via("gamma.example", "/echo/fresh");
    expect(later.status).toBe(200);
    expect(json(later).attestation.aud).toBe(green.worker.sessionId);
  });
});

describe("takeover between hostnames of one env", () => {
  it("deny: 503 placement held by another hostname, and the row stays", async () => {
    const red1 = await named("red1.example", { env: "red", takeover: "deny" });
    await named("red2.example", { env: "red", takeover: "deny" });
    const placed = await via("red1.example", "/echo/shared");
    expect(placed.status).toBe(200);
    expectRefusal(await via("red2.example", "/echo/shared"), 503, "placement held by another hostname", "1");
    expect(await getRow(fleet.t, "/echo", "shared", "red")).toMatchObject({
      sessionId: red1.worker.sessionId,
      epoch: json(placed).epoch,
      expiry: "",
    });
  });

  it("wind_down: 503 takeover in progress with Retry-After = the fence; the owner gets a wind_down and the id moves", async () => {
    const log = memoryLogger();
    // What the owner's heartbeats receive, recorded as they arrive (the owner acks a message on
    // its next heartbeat, so the queue alone cannot prove the fence reached it).
    const tap = heartbeatTap();
    const blue1 = await named("blue1.example", { env: "blue", takeover: "wind_down", logger: log, fetch: tap.fetch });
    const blue2 = await named("blue2.example", { env: "blue", takeover: "wind_down" });
    const placed = await via("blue1.example", "/echo/moving");
    expect(placed.status).toBe(200);
    const owner = blue1.worker.sessionId!;

    const before = await fleet.t.redis.timeMs();
    const first = await via("blue2.example", "/echo/moving");
    const after = await fleet.t.redis.timeMs();
    expectRefusal(first, 503, "takeover in progress, retry", String(LEASE / 1000));
    const row = (await getRow(fleet.t, "/echo", "moving", "blue"))!;
    expect(row).toMatchObject({ sessionId: owner, epoch: json(placed).epoch });
    expect(Number(row.expiry)).toBeGreaterThanOrEqual(before + LEASE);
    expect(Number(row.expiry)).toBeLessThanOrEqual(after + LEASE);

    // The fence was queued to the owner as a wind_down control message: whatever is still queued
    // (the owner may have fetched and acked it already) carries the fence as its deadline …
    const queued = Object.values(await fleet.t.redis.hgetall(keys.queue(owner))).map(
      (m) => JSON.parse(m) as Record<string, unknown>,
    );
    expect(queued.map((m) => ({ ...m }))).toEqual(
      queued.map(() => ({ type: "wind_down", ns: "/echo", id: "moving", deadlineAt: Number(row.expiry) })),
    );
    // … and the owner's next heartbeat (every lease / 3) delivers it, with the deadline the fence
    // leaves at peek time: ceil((fence - now) / 1000) seconds, now between the heartbeat's send
    // and its answer. Unconditional: the tap saw it whether or not it is still queued.
    await until(() => tap.delivered.some((m) => m.id === "moving"), 3 * (LEASE / 3) + 2000, 20);
    const delivered = tap.delivered.filter((m) => m.id === "moving");
    const order = delivered[0]!;
    expect(order).toEqual({
      msgId: expect.any(String),
      type: "wind_down",
      ns: "/echo",
      id: "moving",
      deadline: expect.any(Number),
      sentAt: expect.any(Number),
      receivedAt: expect.any(Number),
    });
    expect(order.deadline!).toBeGreaterThanOrEqual(
      Math.max(0, Math.ceil((Number(row.expiry) - order.receivedAt) / 1000)) - 1,
    );
    expect(order.deadline!).toBeLessThanOrEqual(Math.ceil((Number(row.expiry) - order.sentAt) / 1000) + 1);
    expect(order.deadline!).toBeLessThanOrEqual(LEASE / 1000);
    // Re-deliveries (until the ack) are the same message; nothing else was sent about this id.
    expect(new Set(delivered.map((m) => m.msgId)).size).toBe(1);
    expect(tap.delivered.filter((m) => m.id !== "moving")).toEqual([]);

    // … a second request during the fence reports what is left of it and queues nothing new.
    const beforeSecond = await fleet.t.redis.timeMs();
    const second = await via("blue2.example", "/echo/moving");
    const afterSecond = await fleet.t.redis.timeMs();
    expectRefusal(second, 503, "takeover in progress, retry");
    const secondRetryAfter = Number(second.headers["retry-after"]);
    expect(secondRetryAfter).toBeGreaterThanOrEqual(retryAfterFor(Number(row.expiry), afterSecond));
    expect(secondRetryAfter).toBeLessThanOrEqual(retryAfterFor(Number(row.expiry), beforeSecond));
    expect((await getRow(fleet.t, "/echo", "moving", "blue"))!.expiry).toBe(row.expiry);

    // … which the owner receives: it winds the instance down and releases the placement.
    await until(
      () => log.lines.some((l) => l.includes("instance wound down") && l.includes('"id":"moving"')),
      15_000,
      50,
    );
    expect(blue1.worker.instances().some((i) => i.id === "moving")).toBe(false);
    expect(await fleet.t.redis.client.hlen(keys.queue(owner))).toBe(0);

    const moved = await via("blue2.example", "/echo/moving");
    expect(moved.status).toBe(200);
    expect(json(moved).attestation.aud).toBe(blue2.worker.sessionId);
    expect(BigInt(json(moved).epoch)).toBeGreaterThan(BigInt(json(placed).epoch));
  }, 30_000);
});

describe("a verified caller's scope: its hostname and the env its registration names", () => {
  const callerHeaders = (from: FleetWorker, instance: string): Record<string, string> => ({
    "pinboard-from": instance,
    "pinboard-session": from.worker.sessionId!,
    "pinboard-session-secret": from.worker.secret,
  });

  it("reaches another namespace on the same hostname and env, with the caller claim", async () => {
    const rooms = await named("violet.example", { env: "v1", namespaces: { "/rooms": Echo } });
    await named("violet.example", { env: "v1", namespaces: { "/users": Echo } });
    expect((await via("violet.example", "/rooms/room-1")).status).toBe(200);
    const res = await rawRequest(`${fleet.pb.url}/users/u1`, {
      headers: { host: "violet.example", ...callerHeaders(rooms, "/rooms/room-1") },
    });
    expect(res.status).toBe(200);
    expect(json(res).attestation).toMatchObject({ caller: "/rooms/room-1", depth: 1 });
  });

  it("403 target outside caller scope for another hostname, or the same hostname bound to another env", async () => {
    const rooms = await named("indigo.example", { env: "i1", namespaces: { "/rooms": Echo } });
    await named("indigo.example", { env: "i2", namespaces: { "/users": Echo } });
    await named("teal.example", { env: "i1", namespaces: { "/rooms": Echo, "/users": Echo } });
    expect((await via("indigo.example", "/rooms/room-2")).status).toBe(200);
    const headers = callerHeaders(rooms, "/rooms/room-2");
    // /users on indigo.example is bound to env i2; the caller's registration names i1.
    expectRefusal(
      await rawRequest(`${fleet.pb.url}/users/u2`, { headers: { host: "indigo.example", ...headers } }),
      403,
      "target outside caller scope",
    );
    expectRefusal(
      await rawRequest(`${fleet.pb.url}/users/u2`, { headers: { host: "teal.example", ...headers } }),
      403,
      "target outside caller scope",
    );
    // Without caller headers both targets are served.
    expect((await via("indigo.example", "/users/u2")).status).toBe(200);
    expect((await via("teal.example", "/users/u2")).status).toBe(200);
  });
});

describe("refusals decided by the binding lookup", () => {
  const resolutions = async (): Promise<Record<string, number>> => {
    const res = await fetch(`${fleet.pb.url}/registry/health`, {
      headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
    });
    return ((await res.json()) as { resolutions: Record<string, number> }).resolutions;
  };

  it("are counted on /registry/health like the script's: no-hostname-workers, env-conflict", async () => {
    const before = await resolutions();
    expectRefusal(await via("nobody-else.example", "/echo/doc"), 503, "no live workers for hostname", "1");
    expect((await resolutions())["no-hostname-workers"]).toBe((before["no-hostname-workers"] ?? 0) + 1);

    await named("orange.example", { env: "orange" });
    expect((await via("orange.example", "/echo/doc")).status).toBe(200);
    // The env's takeover binding gone while its (hostname, ns) binding stays.
    const saved = (await fleet.t.redis.client.hget(keys.envBindings, "orange"))!;
    await fleet.t.redis.client.hdel(keys.envBindings, "orange");
    try {
      expectRefusal(await via("orange.example", "/echo/other"), 503, "hostname bindings inconsistent, retry", "1");
      expect((await resolutions())["env-conflict"]).toBe((before["env-conflict"] ?? 0) + 1);
    } finally {
      await fleet.t.redis.client.hset(keys.envBindings, "orange", saved);
    }
  });
});
