import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { putRow } from "../support/rows.ts";
import { type ScriptedWorker, startScriptedWorker, viaApp } from "../support/scripted-worker.ts";

/**
 * "Every /registry/* route but /registry/health answers 503 {"error":"not the serving fleet"} +
 * Retry-After: 1 while this node is not serving", for the operator routes (fleet-license.test.ts
 * holds the worker routes). A node stops serving when a node of a higher PINBOARD_FLEET_EPOCH
 * overwrites the fleet license. The serving check comes after Passport and before the body.
 */

let t: TestRedis;
let w: ScriptedWorker;
const nodes: TestPinboard[] = [];

beforeAll(async () => {
  t = await startTestRedis();
  w = await startScriptedWorker({ stats: { status: 200, body: '{"ok":true}' } });
});
afterAll(async () => {
  await w?.close();
  await Promise.all(nodes.map((n) => n.close()));
  await t?.stop();
});

async function node(env: Record<string, string> = {}): Promise<TestPinboard> {
  const pb = await startTestPinboard(t, env);
  nodes.push(pb);
  return pb;
}

type Call = { method: "GET" | "POST"; path: string; body?: unknown; raw?: string };

async function answer(pb: TestPinboard, call: Call, token?: string) {
  const res = await pb.call(call.method, call.path, {
    ...(token ? { token } : {}),
    ...(call.body !== undefined ? { body: call.body } : {}),
    ...(call.raw !== undefined ? { raw: call.raw, headers: { "content-type": "application/json" } } : {}),
  });
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}

describe("operator routes on a node that is not serving", () => {
  it("answer 503 not the serving fleet with Retry-After: 1; /registry/health still answers 200", async () => {
    const old = await node();
    expect(old.deps.fleet.peek().serving).toBe(true);
    const workerToken = await credential("pinboard:worker");
    const clientId = "not-serving-client";
    const sessionId = await w.register(viaApp(old), workerToken, { clientId, namespaces: ["/ns"] });
    await putRow(t, "/ns", "doc", { sessionId, epoch: "10" });
    const operator = await credential("pinboard:operator");

    const valid: Call[] = [
      { method: "GET", path: "/registry/workers" },
      { method: "GET", path: "/registry/overview" },
      { method: "GET", path: "/registry/stats" },
      { method: "POST", path: "/registry/wind_down", body: { namespace: "/ns", id: "doc", deadline: 60 } },
      { method: "POST", path: "/registry/drain", body: { clientId, deadline: null } },
      { method: "POST", path: "/registry/undrain", body: { clientId } },
      { method: "GET", path: "/registry/placement?ns=/ns&id=doc" },
      { method: "GET", path: "/registry/spread" },
    ];
    // While serving, each answers as the route does (the control for what follows).
    const serving = [];
    for (const call of valid) serving.push(await answer(old, call, operator));
    expect(serving.map((a) => a.status)).toEqual([200, 200, 200, 200, 200, 200, 200, 200]);
    expect(serving[2]!.body).toEqual({ workers: [{ sessionId, clientId, hostname: null, stats: { ok: true } }] });
    expect(serving[3]!.body).toEqual({ queued: true });
    expect(serving[4]!.body).toEqual({ drained: true });
    expect(serving[5]!.body).toEqual({ revoked: true });

    // A node of a higher fleet epoch takes the license over; this one stops serving.
    const next = await node({ PINBOARD_FLEET_EPOCH: "1" });
    expect(next.deps.fleet.peek().serving).toBe(true);
    expect((await old.deps.fleet.refresh()).serving).toBe(false);

    const before = await t.snapshot();
    const refused = { status: 503, retryAfter: "1", body: { error: "not the serving fleet" } };
    // Bodies that would be 400 (schema, unparseable JSON) are refused the same way: the serving
    // check runs before the body is read.
    const invalid: Call[] = [
      { method: "POST", path: "/registry/wind_down", body: { namespace: 7 } },
      { method: "POST", path: "/registry/drain", raw: "{not json" },
      { method: "POST", path: "/registry/undrain", body: {} },
      { method: "GET", path: "/registry/overview?ns=no-slash" },
      { method: "GET", path: "/registry/placement?ns=no-slash" },
    ];
    for (const call of [...valid, ...invalid]) {
      expect(await answer(old, call, operator), `${call.method} ${call.path}`).toEqual(refused);
    }
    // Passport still comes first: 401 without a credential, 403 without the operator scope.
    for (const call of valid) {
      expect(await answer(old, call), `${call.method} ${call.path}`).toEqual({
        status: 401,
        retryAfter: null,
        body: { error: "unauthorized" },
      });
      expect(await answer(old, call, workerToken), `${call.method} ${call.path}`).toEqual({
        status: 403,
        retryAfter: null,
        body: { error: "forbidden" },
      });
    }
    // Nothing was written: no fence, no drain.
    expect(await t.snapshot()).toEqual(before);

    // /registry/health answers, not serving or not.
    const health = await old.call("GET", "/registry/health", { token: operator });
    expect(health.status).toBe(200);
    expect(health.headers.get("retry-after")).toBeNull();
    expect(await health.json()).toEqual({
      resolutions: {},
      connections: 0,
      quarantineMs: expect.any(Number),
      uptimeMs: expect.any(Number),
    });

    // The serving node answers the same routes.
    await next.deps.fleet.refresh();
    expect((await answer(next, valid[0]!, operator)).status).toBe(200);
    expect(await answer(next, valid[4]!, operator)).toEqual({ status: 200, retryAfter: null, body: { drained: true } });
  });
});
