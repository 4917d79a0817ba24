import { describe, expect, it } from "vitest";
import type { OverviewReply } from "../../src/cli/replies.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { getRow } from "../support/rows.ts";
import { type ScriptedWorker, useScriptedWorker, viaApp } from "../support/scripted-worker.ts";

/**
 * The operator's read routes in hostname-aware mode: /registry/workers sorted by hostname then
 * session; /registry/overview's bindings ({hostnames: {"{hostname}{ns}": env}, envs: {env:
 * takeover}}) exact and scoped like the rest; /registry/stats naming each worker's hostname and
 * filtering its namespaces by the env claim.
 */

let t: TestRedis, pb: TestPinboard, token: string;
useRegistryFixture({ PINBOARD_HOSTNAME_AWARE: "true" }, (f) => ({ t, pb, token } = f));

let w: ScriptedWorker;
useScriptedWorker((x) => (w = x));

const op = (claim = {}) => credential("pinboard:operator", claim);
/** A read route's status and JSON body, read as `T` (the answer types of src/cli/replies.ts). */
async function get<T = unknown>(path: string, tok: string): Promise<{ status: number; body: T }> {
  const res = await pb.call("GET", path, { token: tok });
  return { status: res.status, body: (await res.json()) as T };
}
async function register(fields: Record<string, unknown>): Promise<string> {
  return w.register(viaApp(pb), token, fields);
}
/** Code-point order: what "sorted" means for hostnames and hex session ids. */
const byCodePoint = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

describe("GET /registry/workers in hostname-aware mode", () => {
  it("lists workers sorted by hostname, then session", async () => {
    const hostOf = new Map<string, string>();
    const add = async (hostname: string) => {
      const sid = await register({ hostname, env: "sorting", namespaces: ["/sort"] });
      hostOf.set(sid, hostname);
      return sid;
    };
    // Registered so that session order alone would interleave hostnames: keep adding a.example
    // and z.example workers until some z.example session sorts before some a.example one.
    await add("m.example");
    await add("m.example");
    const a: string[] = [];
    const z: string[] = [];
    for (
      let i = 0;
      i < 20 && !(z.length > 0 && a.length > 0 && [...z].sort(byCodePoint)[0]! < [...a].sort(byCodePoint).at(-1)!);
      i++
    ) {
      z.push(await add("z.example"));
      a.push(await add("a.example"));
    }
    const interleaved = [...hostOf.keys()].sort(byCodePoint).map((sid) => hostOf.get(sid)!);
    expect(interleaved).not.toEqual([...interleaved].sort(byCodePoint));

    const expected = [...hostOf.entries()]
      .sort(([sa, ha], [sb, hb]) => byCodePoint(ha, hb) || byCodePoint(sa, sb))
      .map(([sessionId, hostname]) => ({
        sessionId,
        clientId: expect.any(String),
        advertiseUrl: w.url,
        namespaces: ["/sort"],
        hostname,
        envs: { "/sort": "sorting" },
        takeover: "wind_down",
        headroom: 100,
        draining: false,
        expiry: expect.any(Number),
      }));
    const listed = await get("/registry/workers", await op({ namespaces: ["/sort"] }));
    expect(listed).toEqual({ status: 200, body: { workers: expected } });
    // The overview lists the same workers in the same order.
    const overview = await get<OverviewReply>("/registry/overview?ns=/sort", await op({ namespaces: ["/sort"] }));
    expect(overview.status).toBe(200);
    expect(overview.body.workers).toEqual(expected);
  });
});

describe("GET /registry/overview's bindings", () => {
  it("maps {hostname}{ns} to its env and each env to its takeover, scoped to the operator's claim", async () => {
    await t.flush();
    const a = await register({
      clientId: "bind-a",
      hostname: "bind-a.example",
      env: "prod",
      envs: { "/by": "canary" },
      namespaces: ["/bx", "/by"],
      takeover: "deny",
    });
    const b = await register({ clientId: "bind-b", hostname: "bind-b.example", env: "stage", namespaces: ["/bx"] });
    await endColdStart(t);
    const placed = await pb.call("GET", "/by/doc", { headers: { host: "bind-a.example" } });
    expect(placed.status).toBe(200);
    expect(await getRow(t, "/by", "doc", "canary")).toMatchObject({ sessionId: a, hostname: "bind-a.example" });

    const all = await get("/registry/overview", await op());
    expect(all).toEqual({
      status: 200,
      body: {
        workers: [
          {
            sessionId: a,
            clientId: "bind-a",
            advertiseUrl: w.url,
            namespaces: ["/bx", "/by"],
            hostname: "bind-a.example",
            envs: { "/bx": "prod", "/by": "canary" },
            takeover: "deny",
            headroom: 99,
            draining: false,
            expiry: expect.any(Number),
          },
          {
            sessionId: b,
            clientId: "bind-b",
            advertiseUrl: w.url,
            namespaces: ["/bx"],
            hostname: "bind-b.example",
            envs: { "/bx": "stage" },
            takeover: "wind_down",
            headroom: 100,
            draining: false,
            expiry: expect.any(Number),
          },
        ],
        bindings: {
          hostnames: { "bind-a.example/bx": "prod", "bind-a.example/by": "canary", "bind-b.example/bx": "stage" },
          envs: { prod: "deny", canary: "deny", stage: "wind_down" },
        },
        namespaces: [
          { hostname: "bind-a.example", env: "prod", namespace: "/bx", sessionIds: [a], entries: [] },
          {
            hostname: "bind-a.example",
            env: "canary",
            namespace: "/by",
            sessionIds: [a],
            entries: [{ id: "doc", sessionId: a }],
          },
          { hostname: "bind-b.example", env: "stage", namespace: "/bx", sessionIds: [b], entries: [] },
        ],
      },
    });

    const bindingsFor = async (claim: Record<string, unknown>) => {
      const res = await get<OverviewReply>("/registry/overview", await op(claim));
      expect(res.status).toBe(200);
      return res.body.bindings;
    };
    expect(await bindingsFor({ hostnames: ["bind-b.example"] })).toEqual({
      hostnames: { "bind-b.example/bx": "stage" },
      envs: { stage: "wind_down" },
    });
    expect(await bindingsFor({ envs: ["canary"] })).toEqual({
      hostnames: { "bind-a.example/by": "canary" },
      envs: { canary: "deny" },
    });
    expect(await bindingsFor({ namespaces: ["/bx"] })).toEqual({
      hostnames: { "bind-a.example/bx": "prod", "bind-b.example/bx": "stage" },
      envs: { prod: "deny", stage: "wind_down" },
    });
    expect(await bindingsFor({ hostnames: ["nobody.example"] })).toEqual({ hostnames: {}, envs: {} });

    // A higher binding epoch rebinds bind-b.example/bx: the overview names the new env, and the
    // old env, bound by no (hostname, ns) any more, leaves envs.
    await register({
      clientId: "bind-b2",
      hostname: "bind-b.example",
      env: "stage2",
      namespaces: ["/bx"],
      epoch: 1,
      takeover: "deny",
    });
    expect(await bindingsFor({})).toEqual({
      hostnames: { "bind-a.example/bx": "prod", "bind-a.example/by": "canary", "bind-b.example/bx": "stage2" },
      envs: { prod: "deny", canary: "deny", stage2: "deny" },
    });
  });
});

describe("GET /registry/stats in hostname-aware mode", () => {
  it("names each worker's hostname and keeps only the namespaces whose env the operator may see", async () => {
    const sid = await register({
      clientId: "stats-ha",
      hostname: "st.example",
      env: "st-prod",
      envs: { "/sy": "st-canary" },
      namespaces: ["/sx", "/sy"],
    });
    w.stats = {
      status: 200,
      body: JSON.stringify({
        namespaces: { "/sx": { n: 1 }, "/sy": { n: 2 } },
        instances: [
          { ns: "/sx", id: "1" },
          { ns: "/sy", id: "2" },
        ],
      }),
    };
    const claim = { namespaces: ["/sx", "/sy"] };
    const onlyWorker = (stats: unknown) => ({
      status: 200,
      body: { workers: [{ sessionId: sid, clientId: "stats-ha", hostname: "st.example", stats }] },
    });
    expect(await get("/registry/stats", await op({ ...claim, envs: ["st-prod"] }))).toEqual(
      onlyWorker({ namespaces: { "/sx": { n: 1 } }, instances: [{ ns: "/sx", id: "1" }] }),
    );
    expect(await get("/registry/stats", await op({ ...claim, envs: ["st-canary"] }))).toEqual(
      onlyWorker({ namespaces: { "/sy": { n: 2 } }, instances: [{ ns: "/sy", id: "2" }] }),
    );
    expect(await get("/registry/stats", await op({ ...claim, hostnames: ["other.example"] }))).toEqual({
      status: 200,
      body: { workers: [] },
    });
  });
});
