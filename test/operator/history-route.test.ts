import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { HistoryReply } from "../../src/metrics/traffic-history.ts";
import { Echo } from "../support/echo-instance.ts";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { credential, startTestPinboard, type TestPinboard } from "../support/pinboard-app.ts";
import { expectRouteOk } from "../support/route-answers.ts";

/**
 * GET /registry/history on the Node entry as a process: real forwards through the data plane to a
 * worker built on the worker library (one answered 502 by the worker, one by Pinboard) and a
 * refused request, counted in this node's rolling history; the answer parsed with the route's
 * strict schema. It needs the operator scope and, as /metrics, a claim over the whole fleet, and
 * answers on a node that is not serving.
 */

let fleet: Fleet;
const nodes: TestPinboard[] = [];

beforeAll(async () => {
  fleet = await startFleet({ workers: 1 });
  await fleet.skipColdStart();
});
afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  await fleet?.close();
});

async function history(base: string, token: string): Promise<HistoryReply> {
  const res = await fetch(`${base}/registry/history`, { headers: { authorization: `Bearer ${token}` } });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  return expectRouteOk("GET /registry/history", text) as HistoryReply;
}

/** Every slot's refusals added up, by kind. */
function refusalTotals(answer: HistoryReply): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const p of answer.points)
    for (const [kind, n] of Object.entries(p.refusals)) totals[kind] = (totals[kind] ?? 0) + n!;
  return totals;
}

describe("GET /registry/history on the Node entry", () => {
  it("counts this node's forwards, their latency and its refusals by kind", async () => {
    const { url } = fleet.pb;
    for (let i = 0; i < 3; i++) {
      const res = await fetch(`${url}/echo/history-1?sleep=150`);
      expect(res.status).toBe(200);
      await res.arrayBuffer();
    }
    // The worker's own 502 is a forward it answered, not Pinboard's bad gateway.
    const bad = await fetch(`${url}/echo/history-1?status=502`);
    expect(bad.status).toBe(502);
    await bad.arrayBuffer();
    // Pinboard's own 502: the only worker of /gone is registered but no longer listening.
    const gone = await fleet.addWorker({ namespaces: { "/gone": Echo } });
    await gone.listening.close();
    const unreachable = await fetch(`${url}/gone/g1`);
    expect(unreachable.status).toBe(502);
    expect(await unreachable.text()).toBe("bad gateway");
    const unknown = await fetch(`${url}/nowhere/x`);
    expect(unknown.status).toBe(404);
    expect(await unknown.json()).toEqual({ error: "unknown namespace" });

    const answer = await history(url, await fleet.pb.operatorCredential());
    expect(answer.points).toHaveLength(90);
    expect(answer.points.reduce((sum, p) => sum + p.forwards, 0)).toBe(5);
    expect(refusalTotals(answer)).toEqual({ "unknown-ns": 1, bad_gateway: 1 });
    const p99 = Math.max(...answer.points.map((p) => p.p99Ms ?? 0));
    expect(p99).toBeGreaterThanOrEqual(150);
    expect(p99).toBeLessThan(5000);
    expect(Math.abs(answer.now - Date.now())).toBeLessThan(5000);
  });

  it("needs the operator scope: 401 without a credential, 403 with a worker's", async () => {
    const { url } = fleet.pb;
    const none = await fetch(`${url}/registry/history`);
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual({ error: "unauthorized" });
    const worker = await fetch(`${url}/registry/history`, {
      headers: { authorization: `Bearer ${await fleet.pb.workerCredential()}` },
    });
    expect(worker.status).toBe(403);
    expect(await worker.json()).toEqual({ error: "forbidden" });
  });

  it("refuses, as /metrics does, every credential narrower than the whole fleet", async () => {
    const { url } = fleet.pb;
    const read = async (token: string) => {
      const res = await fetch(`${url}/registry/history`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, body: await res.json() };
    };
    const narrow = [
      { namespaces: ["/echo"] },
      { namespaces: ["*"], hostnames: ["a.example"] },
      { namespaces: ["*"], envs: ["prod"] },
    ];
    for (const claim of narrow) {
      const token = await fleet.pb.operatorCredential(claim);
      expect(await read(token), JSON.stringify(claim)).toEqual({ status: 403, body: { error: "forbidden" } });
      // The same credential reads what its claim covers.
      const workers = await fetch(`${url}/registry/workers`, { headers: { authorization: `Bearer ${token}` } });
      expect(workers.status).toBe(200);
      await workers.arrayBuffer();
    }
    const open = await fleet.pb.operatorCredential({ namespaces: ["*"], hostnames: ["*"], envs: ["*"] });
    expect((await read(open)).status).toBe(200);
  });

  it("answers on a node that is not serving, where /registry/workers refuses", async () => {
    // Two in-process nodes under their own prefix (their own fleet license): the later epoch wins.
    const old = await startTestPinboard(fleet.t, { PINBOARD_PREFIX: "history:" });
    nodes.push(old);
    nodes.push(await startTestPinboard(fleet.t, { PINBOARD_PREFIX: "history:", PINBOARD_FLEET_EPOCH: "1" }));
    expect((await old.deps.fleet.refresh()).serving).toBe(false);
    const token = await credential("pinboard:operator");
    expect((await old.call("GET", "/registry/workers", { token })).status).toBe(503);
    const res = await old.call("GET", "/registry/history", { token });
    expect(res.status).toBe(200);
    const answer = expectRouteOk("GET /registry/history", await res.text()) as HistoryReply;
    expect(answer.points.every((p) => p.forwards === 0)).toBe(true);
  });
});
