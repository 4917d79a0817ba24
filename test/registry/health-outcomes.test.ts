import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { getRow } from "../support/rows.ts";
import { type ScriptedWorker, startScriptedWorker, viaApp } from "../support/scripted-worker.ts";

/**
 * GET /registry/health counts each resolution under its outcome, for this node. Every outcome
 * the contract lists — forward, unknown-ns, no-backends, quarantine, not-serving,
 * no-hostname-workers, binding-quarantine, takeover-pending, env-conflict, nack — is provoked
 * here for real through the data plane, each once per node unless said otherwise, and
 * the counts are asserted whole. A single-mode node and a hostname-aware node (each its own
 * fleet, by prefix, on one Redis) are needed: in hostname-aware mode a script no-backends
 * reports as no-hostname-workers. takeover-denied, a refusal the list leaves out, is counted
 * too (docs/decisions.md: every refusal is counted).
 */

let t: TestRedis;
const nodes: TestPinboard[] = [];
const servers: ScriptedWorker[] = [];

beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(nodes.map((n) => n.close()));
  await t?.stop();
});

async function node(env: Record<string, string>): Promise<TestPinboard> {
  const pb = await startTestPinboard(t, env);
  nodes.push(pb);
  return pb;
}
async function server(forward: "ok" | "refuse" = "ok"): Promise<ScriptedWorker> {
  const s = await startScriptedWorker();
  s.forward = forward;
  servers.push(s);
  return s;
}

async function request(pb: TestPinboard, path: string, host?: string) {
  const res = await pb.call("GET", path, host ? { headers: { host } } : {});
  return { status: res.status, retryAfter: res.headers.get("retry-after"), body: await res.json() };
}
const refusal = (error: string, retryAfter = "1") => ({ status: 503, retryAfter, body: { error } });

/** A refusal whose Retry-After is what is left of a cold-start window (one lease, 15 s): 1 to 15. */
function expectWindowRefusal(answer: { retryAfter: string | null }, error: string): void {
  expect(answer).toEqual(refusal(error, expect.stringMatching(/^\d+$/)));
  expect(Number(answer.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(Number(answer.retryAfter)).toBeLessThanOrEqual(15);
}

async function resolutions(pb: TestPinboard): Promise<Record<string, number>> {
  const res = await pb.call("GET", "/registry/health", { token: await credential("pinboard:operator") });
  expect(res.status).toBe(200);
  return ((await res.json()) as { resolutions: Record<string, number> }).resolutions;
}

/** Makes `pb` stop serving: a node of a higher fleet epoch on the same prefix takes the license. */
async function displace(pb: TestPinboard, env: Record<string, string>): Promise<void> {
  const next = await node({ ...env, PINBOARD_FLEET_EPOCH: "1" });
  expect(next.deps.fleet.peek().serving).toBe(true);
  expect((await pb.deps.fleet.refresh()).serving).toBe(false);
}

describe("GET /registry/health counts every resolution outcome", () => {
  it("each outcome provoked once is counted once, on the node that decided it", async () => {
    const workerToken = await credential("pinboard:worker");

    // ── A single-mode node ──────────────────────────────────────────────────────────────────
    const singleEnv = { PINBOARD_PREFIX: "single:" };
    const single = await node(singleEnv);
    const ok = await server();
    const refusing = await server("refuse");
    await ok.register(viaApp(single), workerToken, { namespaces: ["/q"] });

    // quarantine: the bucket's first resolve starts its cold-start window (one lease, 15 s).
    const cold = await request(single, "/q/doc");
    expectWindowRefusal(cold, "registry cold start, retry");
    await endColdStart(t, new Keys("single:", 16));

    // forward
    expect(await request(single, "/q/doc")).toEqual({ status: 200, retryAfter: null, body: { served: "/q/doc" } });
    // unknown-ns
    expect(await request(single, "/nowhere/doc")).toEqual({
      status: 404,
      retryAfter: null,
      body: { error: "unknown namespace" },
    });
    // no-backends: the namespace's only worker is draining.
    await ok.register(viaApp(single), workerToken, { namespaces: ["/nb"], draining: true });
    expect(await request(single, "/nb/doc")).toEqual(refusal("no live backends for namespace"));
    // nack: the only worker refuses the activation in band; the re-resolve finds no other.
    await refusing.register(viaApp(single), workerToken, { namespaces: ["/nack"] });
    expect(await request(single, "/nack/doc")).toEqual(refusal("worker refused activation, retry"));
    expect(refusing.forwards.map((f) => f.url)).toEqual(["/nack/doc"]);
    expect(await getRow(t, "/nack", "doc")).toBeNull();
    // not-serving
    await displace(single, singleEnv);
    expect(await request(single, "/q/doc")).toEqual(refusal("not the serving fleet"));

    const singleCounts = {
      quarantine: 1,
      forward: 1,
      "unknown-ns": 1,
      "no-backends": 1,
      nack: 1,
      "not-serving": 1,
    };
    expect(await resolutions(single)).toEqual(singleCounts);

    // ── A hostname-aware node ───────────────────────────────────────────────────────────────
    const awareEnv = { PINBOARD_PREFIX: "aware:", PINBOARD_HOSTNAME_AWARE: "true" };
    const aware = await node(awareEnv);
    const reg = (s: ScriptedWorker, fields: Record<string, unknown>) =>
      s.register(viaApp(aware), workerToken, { namespaces: ["/echo"], ...fields });
    await reg(ok, { hostname: "t1.example", env: "t", takeover: "wind_down" });

    // quarantine, as in single mode.
    const awareCold = await request(aware, "/echo/cold", "t1.example");
    expectWindowRefusal(awareCold, "registry cold start, retry");
    await endColdStart(t, new Keys("aware:", 16));

    // forward, then takeover-pending: another hostname of env t asks for the same id.
    expect(await request(aware, "/echo/moving", "t1.example")).toEqual({
      status: 200,
      retryAfter: null,
      body: { served: "/echo/moving" },
    });
    await reg(ok, { hostname: "t2.example", env: "t" });
    expect(await request(aware, "/echo/moving", "t2.example")).toEqual(refusal("takeover in progress, retry", "15"));

    // takeover-denied (env d agreed deny), after a second forward.
    await reg(ok, { hostname: "d1.example", env: "d", takeover: "deny" });
    await reg(ok, { hostname: "d2.example", env: "d", takeover: "deny" });
    expect(await request(aware, "/echo/held", "d1.example")).toEqual({
      status: 200,
      retryAfter: null,
      body: { served: "/echo/held" },
    });
    expect(await request(aware, "/echo/held", "d2.example")).toEqual(refusal("placement held by another hostname"));

    // no-hostname-workers, twice: a hostname nothing is bound to (the binding lookup refuses),
    // and a bound hostname whose only worker is draining (the script's no-backends, reported so).
    expect(await request(aware, "/echo/doc", "nobody.example")).toEqual(refusal("no live workers for hostname"));
    await reg(ok, { hostname: "idle.example", env: "idle", draining: true });
    expect(await request(aware, "/echo/doc", "idle.example")).toEqual(refusal("no live workers for hostname"));

    // binding-quarantine: a higher binding epoch displaced (q.example, /echo) to another env.
    await reg(ok, { hostname: "q.example", env: "q-blue", epoch: 1 });
    await reg(ok, { hostname: "q.example", env: "q-green", epoch: 2 });
    const displaced = await request(aware, "/echo/fresh", "q.example");
    expectWindowRefusal(displaced, "hostname binding displaced, retry");

    // env-conflict: the (hostname, ns) binding names an env without an agreed takeover.
    await reg(ok, { hostname: "o.example", env: "o" });
    expect(await t.redis.client.hdel(new Keys("aware:", 16).envBindings, "o")).toBe(1);
    expect(await request(aware, "/echo/doc", "o.example")).toEqual(refusal("hostname bindings inconsistent, retry"));

    // nack: the hostname's only worker refuses; the re-resolve finds no other.
    await reg(refusing, { hostname: "n.example", env: "n" });
    expect(await request(aware, "/echo/doc", "n.example")).toEqual(refusal("worker refused activation, retry"));

    // not-serving
    await displace(aware, awareEnv);
    expect(await request(aware, "/echo/moving", "t1.example")).toEqual(refusal("not the serving fleet"));

    expect(await resolutions(aware)).toEqual({
      quarantine: 1,
      forward: 2,
      "takeover-pending": 1,
      "takeover-denied": 1,
      "no-hostname-workers": 2,
      "binding-quarantine": 1,
      "env-conflict": 1,
      nack: 1,
      "not-serving": 1,
    });
    // Counts are per node: the single-mode node's are as they were.
    expect(await resolutions(single)).toEqual(singleCounts);
  });
});
