import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorker, type PinnedWorker } from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { Keys } from "../../src/redis/keys.ts";
import { Echo } from "../support/echo-instance.ts";
import { credential } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { getRow, putRow } from "../support/rows.ts";
import { type ScriptedWorker, startScriptedWorker, viaUrl } from "../support/scripted-worker.ts";
import { type ServedPinboard, startServedPinboard } from "../support/served-pinboard.ts";

/**
 * GET /registry/placement?ns=&id= (single mode): the id's row read at its bucket, with its owner
 * (live or dead), epoch, wind-down fence (set by wind_down, cleared by wind_down with deadline
 * null, passed), tag, overwritten marker, durable alarm and the live owner's own view of the
 * instance from its /_pinned/stats; a worker that does not answer is `unreachable`; a claim that
 * does not cover the namespace gets the very answer of a missing id; malformed queries are 400.
 * The owner is a real worker of the worker library, registered over HTTP with the served app.
 */

const keys = new Keys("pinboard:", 16);
let t: TestRedis, pb: ServedPinboard, worker: PinnedWorker, listening: Listening, silent: ScriptedWorker;
let silentSid: string;
const quiet = { info: () => {}, warn: () => {}, error: () => {} };

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startServedPinboard(t, { env: { PINBOARD_LEASE_TTL_MS: "600000" } });
  await endColdStart(t);
  const token = await credential("pinboard:worker");
  worker = createWorker({ pinboardUrl: pb.url, credential: token, namespaces: { "/echo": Echo }, logger: quiet });
  listening = await worker.listen({ port: 0 });
  await worker.start();
  silent = await startScriptedWorker({ stats: { status: 500, body: "{}" } });
  silentSid = await silent.register(viaUrl(pb.url), token, { namespaces: ["/mute"] });
});
afterAll(async () => {
  await worker?.stop().catch(() => {});
  await listening?.close();
  await silent?.close();
  await pb?.close();
  await t?.stop();
});

async function story(query: string, claim: Record<string, unknown> = {}) {
  const op = await credential("pinboard:operator", claim);
  const res = await fetch(`${pb.url}/registry/placement?${query}`, { headers: { authorization: `Bearer ${op}` } });
  const text = await res.text();
  if (res.status === 200) expectRouteOk("GET /registry/placement", text);
  return { status: res.status, body: JSON.parse(text) as unknown };
}

async function windDown(id: string, deadline: number | null): Promise<void> {
  const op = await credential("pinboard:operator");
  const res = await fetch(`${pb.url}/registry/wind_down`, {
    method: "POST",
    headers: { authorization: `Bearer ${op}`, "content-type": "application/json" },
    body: JSON.stringify({ namespace: "/echo", id, deadline }),
  });
  expect(res.status).toBe(200);
}

/** The worker's instance item as its /_pinned/stats lists it. */
const activeInstance = (id: string, epoch: string) => ({
  ns: "/echo",
  id,
  epoch,
  state: "active",
  inflight: 0,
  queued: 0,
  sockets: 0,
  alarm: null,
  activatedAt: expect.any(Number),
});

describe("GET /registry/placement", () => {
  it("tells a live placement's story: owner, epoch, no fence, and the owner's view of the instance", async () => {
    const res = await fetch(`${pb.url}/echo/story-1`);
    expect(res.status).toBe(200);
    await res.arrayBuffer();
    const row = await getRow(t, "/echo", "story-1");
    expect(row?.sessionId).toBe(worker.sessionId);

    expect(await story("ns=/echo&id=story-1")).toEqual({
      status: 200,
      body: {
        placements: [
          {
            namespace: "/echo",
            id: "story-1",
            env: null,
            hostname: null,
            sessionId: worker.sessionId,
            clientId: worker.clientId,
            owner: "live",
            epoch: row!.epoch,
            fence: "none",
            overwritten: null,
            alarm: null,
            instance: activeInstance("story-1", row!.epoch!),
          },
        ],
      },
    });
  });

  it("shows the wind-down fence wind_down sets and clears, a passed one, the tag, marker and alarm", async () => {
    await (await fetch(`${pb.url}/echo/story-2`)).arrayBuffer();
    const { epoch } = (await getRow(t, "/echo", "story-2"))!;
    const base = {
      namespace: "/echo",
      id: "story-2",
      env: null,
      hostname: null,
      sessionId: worker.sessionId,
      clientId: worker.clientId,
      owner: "live",
      epoch,
    };

    const before = Date.now();
    await windDown("story-2", 3600);
    const fenced = (await story("ns=/echo&id=story-2")).body as { placements: Array<{ expiry: number }> };
    const expiry = fenced.placements[0]!.expiry;
    expect(expiry).toBeGreaterThanOrEqual(before + 3600_000 - 2000);
    expect(expiry).toBeLessThanOrEqual(Date.now() + 3600_000 + 2000);
    expect(fenced).toEqual({
      placements: [
        {
          ...base,
          expiry,
          fence: "pending",
          overwritten: null,
          alarm: null,
          // The wind_down message reaches the worker on its next heartbeat; until then it holds the instance.
          instance: { ...activeInstance("story-2", epoch!), state: expect.any(String) },
        },
      ],
    });

    await windDown("story-2", null);
    expect((await story("ns=/echo&id=story-2")).body).toEqual({
      placements: [
        {
          ...base,
          fence: "none",
          overwritten: null,
          alarm: null,
          instance: { ...activeInstance("story-2", epoch!), state: expect.any(String) },
        },
      ],
    });

    // A fence in the past, an owner tag, an overwritten marker and a durable alarm, written as their owners write them.
    const passed = Date.now() - 5000;
    await putRow(t, "/echo", "story-2", {
      sessionId: worker.sessionId!,
      epoch,
      expiry: String(passed),
      tag: "gold\nplated",
    });
    await t.redis.client.hset(keys.overwritten(keys.bucketOf("story-2")), "*\n/echo\nstory-2", "77");
    await t.redis.client.zadd("pinned:{pinned-index}:alarms", 1_900_000_000_000, "/echo/story-2");
    expect((await story("ns=/echo&id=story-2")).body).toEqual({
      placements: [
        {
          ...base,
          expiry: passed,
          tag: "gold\nplated",
          fence: "passed",
          overwritten: "77",
          alarm: 1_900_000_000_000,
          instance: expect.anything(),
        },
      ],
    });
  });

  it("names a dead owner (no record, or a placeholder row) and asks no one", async () => {
    await putRow(t, "/echo", "orphan", { sessionId: "gone-session", epoch: "12" });
    await putRow(t, "/echo", "placeholder", { sessionId: "", hostname: "" });
    const dead = { namespace: "/echo", env: null, hostname: null, clientId: null, owner: "dead" };
    const none = { fence: "none", overwritten: null, alarm: null, instance: null };
    expect(await story("ns=/echo&id=orphan")).toEqual({
      status: 200,
      body: { placements: [{ ...dead, id: "orphan", sessionId: "gone-session", epoch: "12", ...none }] },
    });
    expect(await story("ns=/echo&id=placeholder")).toEqual({
      status: 200,
      body: { placements: [{ ...dead, id: "placeholder", sessionId: "", epoch: null, ...none }] },
    });
  });

  it("names an owner whose record has expired dead, with its client, and does not ask it", async () => {
    const dying = await startScriptedWorker({ stats: { status: 200, body: JSON.stringify({ instances: [] }) } });
    try {
      const sid = await dying.register(viaUrl(pb.url), await credential("pinboard:worker"), {
        clientId: "dying-client",
        namespaces: ["/dying"],
      });
      const record = JSON.parse((await t.redis.hget(keys.sessions, sid))!) as { expiry: number };
      await t.redis.client.hset(keys.sessions, sid, JSON.stringify({ ...record, expiry: Date.now() - 1000 }));
      await putRow(t, "/dying", "left", { sessionId: sid, epoch: "55" });
      expect(await story("ns=/dying&id=left")).toEqual({
        status: 200,
        body: {
          placements: [
            {
              namespace: "/dying",
              id: "left",
              env: null,
              hostname: null,
              sessionId: sid,
              clientId: "dying-client",
              owner: "dead",
              epoch: "55",
              fence: "none",
              overwritten: null,
              alarm: null,
              instance: null,
            },
          ],
        },
      });
      expect(dying.statsCalls).toEqual([]);
    } finally {
      await dying.close();
    }
  });

  it("reports an owner whose /_pinned/stats does not answer 2xx as unreachable", async () => {
    await putRow(t, "/mute", "hushed", { sessionId: silentSid, epoch: "31" });
    const calls = silent.statsCalls.length;
    expect(await story("ns=/mute&id=hushed")).toEqual({
      status: 200,
      body: {
        placements: [
          {
            namespace: "/mute",
            id: "hushed",
            env: null,
            hostname: null,
            sessionId: silentSid,
            clientId: expect.stringMatching(/^scripted-/),
            owner: "live",
            epoch: "31",
            fence: "none",
            overwritten: null,
            alarm: null,
            instance: { error: "unreachable" },
          },
        ],
      },
    });
    // It was asked, attested for its session.
    expect(silent.statsCalls.slice(calls)).toEqual([{ aud: silentSid }]);
  });

  it("answers a claim that does not cover the namespace exactly as it answers a missing id", async () => {
    const missing = await story("ns=/echo&id=never-placed");
    expect(missing).toEqual({ status: 404, body: { error: "placement not found" } });
    expect(await story("ns=/echo&id=story-1", { namespaces: ["/mute"] })).toEqual(missing);
    expect(await story("ns=/nothing&id=story-1")).toEqual(missing);
    // A claim naming the namespace sees it.
    expect((await story("ns=/echo&id=story-1", { namespaces: ["/echo"] })).status).toBe(200);
  });

  it("refuses a missing or malformed ns or id with 400", async () => {
    for (const [query, error] of [
      ["id=story-1", "ns is required"],
      ["ns=&id=story-1", "ns is required"],
      ["ns=echo&id=story-1", "invalid namespace"],
      ["ns=/a/b&id=story-1", "invalid namespace"],
      ["ns=/echo", "id is required"],
      ["ns=/echo&id=", "id is required"],
      ["ns=/echo&id=a*b", "invalid id"],
      [`ns=/echo&id=${"x".repeat(257)}`, "invalid id"],
    ] as const) {
      expect({ query, ...(await story(query)) }).toEqual({ query, status: 400, body: { error } });
    }
  });
});
