import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credential } from "../../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { expectRouteOk } from "../../support/route-answers.ts";
import { putRows } from "../../support/rows.ts";
import { type ScriptedWorker, startScriptedWorker, viaUrl } from "../../support/scripted-worker.ts";
import { startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";

/**
 * The console explorer's routes on the Workers entry (workerd through Miniflare, Redis through
 * the REST bridge with @upstash/redis): a prefix search goes to Redis as HSCAN MATCH, the
 * placement's story asks its owner's /_pinned/stats with an attestation, and the spread is
 * counted by the spread-slice script, each in a handful of subrequests.
 */

let t: TestRedis, wk: WorkersEntry, w: ScriptedWorker, sid: string, op: string;

beforeAll(async () => {
  t = await startTestRedis();
  [wk, w, op] = await Promise.all([
    // A lease longer than the file, so the worker stays live without heartbeats.
    startWorkersEntry({ redis: t, env: { PINBOARD_LEASE_TTL_MS: "600000" } }),
    startScriptedWorker({
      stats: {
        status: 200,
        body: JSON.stringify({
          instances: [
            { ns: "/wx", id: "acme-1", epoch: "21", state: "active" },
            { ns: "/wx", id: "acme-2", epoch: "22", state: "active" },
          ],
        }),
      },
    }),
    credential("pinboard:operator"),
  ]);
  sid = await w.register(viaUrl(wk.url), await credential("pinboard:worker"), {
    clientId: "wx-client",
    namespaces: ["/wx"],
  });
  await putRows(t, "/wx", [
    { id: "acme-1", row: { sessionId: sid, epoch: "21" } },
    { id: "acme-2", row: { sessionId: sid, epoch: "22", tag: "gold" } },
    { id: "g*1", row: { sessionId: sid, epoch: "23" } },
    { id: "gx1", row: { sessionId: sid, epoch: "24" } },
    ...Array.from({ length: 500 }, (_, i) => ({ id: `other-${i}`, row: { sessionId: sid, epoch: "25" } })),
    { id: "lost", row: { sessionId: "gone", epoch: "26" } },
  ]);
});
afterAll(async () => {
  await wk?.stop();
  await w?.close();
  await t?.stop();
});

async function get(path: string): Promise<{ status: number; body: unknown; subrequests: number }> {
  const before = wk.bridge.requests();
  const res = await fetch(`${wk.url}${path}`, { headers: { authorization: `Bearer ${op}` } });
  const text = await res.text();
  const route = `GET ${path.split("?")[0]}`;
  if (res.status === 200) expectRouteOk(route, text);
  return { status: res.status, body: JSON.parse(text), subrequests: wk.bridge.requests() - before };
}

describe("the explorer's routes on the Workers entry", () => {
  it("searches ids by prefix in Redis, glob characters matching themselves", async () => {
    const star = await get(`/registry/overview?limit=10&prefix=${encodeURIComponent("g*")}`);
    expect(star.status).toBe(200);
    expect((star.body as { namespaces: unknown[] }).namespaces).toEqual([
      {
        hostname: null,
        env: null,
        namespace: "/wx",
        sessionIds: [sid],
        entries: [{ id: "g*1", sessionId: sid, epoch: "23" }],
      },
    ]);
    const acme = await get("/registry/overview?limit=10&prefix=acme-");
    expect((acme.body as { namespaces: Array<{ entries: unknown[] }> }).namespaces[0]!.entries).toEqual([
      { id: "acme-1", sessionId: sid, epoch: "21" },
      { id: "acme-2", sessionId: sid, epoch: "22", tag: "gold" },
    ]);
  });

  it("tells a placement's story with its owner's own view of the instance", async () => {
    const calls = w.statsCalls.length;
    const answer = await get("/registry/placement?ns=/wx&id=acme-2");
    expect(answer).toMatchObject({ status: 200 });
    expect(answer.body).toEqual({
      placements: [
        {
          namespace: "/wx",
          id: "acme-2",
          env: null,
          hostname: null,
          sessionId: sid,
          clientId: "wx-client",
          owner: "live",
          epoch: "22",
          tag: "gold",
          fence: "none",
          overwritten: null,
          alarm: null,
          instance: { ns: "/wx", id: "acme-2", epoch: "22", state: "active" },
        },
      ],
    });
    expect(w.statsCalls.slice(calls)).toEqual([{ aud: sid }]);
    expect(answer.subrequests).toBeLessThanOrEqual(6);
    expect(await get("/registry/placement?ns=/wx&id=nobody")).toMatchObject({
      status: 404,
      body: { error: "placement not found" },
    });
  });

  it("counts the spread inside Redis", async () => {
    const answer = await get("/registry/spread");
    expect(answer.body).toEqual({
      countedAt: expect.any(Number),
      complete: true,
      workers: [{ sessionId: sid, placements: 504 }],
      unowned: 1,
    });
    expect(answer.subrequests).toBeLessThanOrEqual(6);
  });
});
