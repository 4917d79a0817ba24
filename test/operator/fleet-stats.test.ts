import { afterEach, describe, expect, it } from "vitest";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import {
  InflightTracker,
  type ScriptedWorker,
  type StatsAnswer,
  startScriptedWorker,
  viaApp,
} from "../support/scripted-worker.ts";

/**
 * GET /registry/stats: each live worker's GET {advertiseUrl}/_pinned/stats, attested, 3 s
 * timeout, 8 concurrent; `namespaces` keys and `instances` items of namespaces the operator may
 * not see, or the worker did not register, are dropped; a non-2xx, a timeout or a non-object
 * body reports the worker as {"error":"unreachable"}. The workers are plain node:http servers
 * (test/support/scripted-worker.ts) that verify the attestation and answer as scripted.
 *
 * Each test registers its workers under namespaces of its own and asks with an operator
 * credential limited to them, so it sees exactly its own workers.
 */

let pb: TestPinboard;
let token: string;
useRegistryFixture({}, (f) => ({ pb, token } = f));

const workers: ScriptedWorker[] = [];
afterEach(async () => {
  await Promise.all(workers.splice(0).map((w) => w.close()));
});

async function scripted(stats: StatsAnswer, tracker?: InflightTracker): Promise<ScriptedWorker> {
  const w = await startScriptedWorker({ stats, ...(tracker ? { tracker } : {}) });
  workers.push(w);
  return w;
}

const op = (namespaces: string[]) => credential("pinboard:operator", { namespaces });
async function stats(tok: string): Promise<{ status: number; body: unknown; ms: number }> {
  const started = Date.now();
  const res = await pb.call("GET", "/registry/stats", { token: tok });
  const body: unknown = await res.json();
  return { status: res.status, body, ms: Date.now() - started };
}

const json = (value: unknown): StatsAnswer => ({ status: 200, body: JSON.stringify(value) });
/** One worker's entry in the /registry/stats answer: its stats, or why it has none. */
type StatsEntry = { sessionId: string; clientId: string; hostname: string | null } & (
  | { stats: unknown }
  | { error: string }
);
const bySession = <T extends { sessionId: string }>(entries: T[]): T[] =>
  [...entries].sort((a, b) => a.sessionId.localeCompare(b.sessionId));

describe("GET /registry/stats relays each worker's stats, filtered", () => {
  it("drops namespaces keys and instances items the operator may not see or the worker did not register", async () => {
    /** The worker's fields besides namespaces and instances, relayed as they are. */
    const relayed = { draining: false, leaseFlaps: 2, reregistrations: 1, process: { uptimeMs: 1234, rssBytes: 5678 } };
    const raw = {
      ...relayed,
      namespaces: { "/sa": { instances: 1 }, "/sb": { instances: 2 }, "/sc": { instances: 3 } },
      instances: [
        { ns: "/sa", id: "a-1" },
        { ns: "/sb", id: "b-1" },
        { ns: "/sc", id: "c-1" },
        { ns: "/sa", id: "a-2", extra: true },
      ],
    };
    const w = await scripted(json(raw));
    const sid = await w.register(viaApp(pb), token, { clientId: "stats-both", namespaces: ["/sa", "/sb"] });
    const statsBoth = { sessionId: sid, clientId: "stats-both", hostname: null };
    const other = await scripted(json({ namespaces: { "/sb": {} }, instances: [{ ns: "/sb", id: "x" }] }));
    const otherSid = await other.register(viaApp(pb), token, { clientId: "stats-sb-only", namespaces: ["/sb"] });

    // /sc is not registered by the worker: dropped even for an operator whose claim names it.
    const wide = await stats(await op(["/sa", "/sb", "/sc"]));
    expect(wide.status).toBe(200);
    expect(wide.body).toEqual({
      workers: bySession([
        {
          ...statsBoth,
          stats: {
            ...relayed,
            namespaces: { "/sa": { instances: 1 }, "/sb": { instances: 2 } },
            instances: [
              { ns: "/sa", id: "a-1" },
              { ns: "/sb", id: "b-1" },
              { ns: "/sa", id: "a-2", extra: true },
            ],
          },
        },
        {
          sessionId: otherSid,
          clientId: "stats-sb-only",
          hostname: null,
          stats: { namespaces: { "/sb": {} }, instances: [{ ns: "/sb", id: "x" }] },
        },
      ]),
    });

    // An operator of /sa only: /sb keys and items dropped, and the /sb-only worker not listed at all.
    const narrow = await stats(await op(["/sa"]));
    expect(narrow.status).toBe(200);
    expect(narrow.body).toEqual({
      workers: [
        {
          ...statsBoth,
          stats: {
            ...relayed,
            namespaces: { "/sa": { instances: 1 } },
            instances: [
              { ns: "/sa", id: "a-1" },
              { ns: "/sa", id: "a-2", extra: true },
            ],
          },
        },
      ],
    });

    // Every call was attested for the worker's own session (a failed verification would have
    // been a 403, reported as unreachable).
    expect(w.statsCalls).toEqual([{ aud: sid }, { aud: sid }]);
    expect(other.statsCalls).toEqual([{ aud: otherSid }]);
  });
});

describe("GET /registry/stats reports {error: unreachable}", () => {
  it("for a non-2xx, a redirect, a 2xx without an object body, and a worker that is gone", async () => {
    // A redirect target that would answer well; it is never asked: redirects are not followed.
    const target = await scripted(json({ followed: true }));
    const answers: Array<[string, StatsAnswer]> = [
      ["500", { status: 500, body: '{"detail":"boom"}' }],
      ["404", { status: 404, body: '{"detail":"not found"}' }],
      ["403", { status: 403, body: '{"detail":"invalid attestation"}' }],
      ["302", { redirect: `${target.url}/_pinned/stats` }],
      ["array", json([{ ns: "/su" }])],
      ["empty array", json([])],
      ["string", json("stats")],
      ["null", json(null)],
      ["number", json(42)],
      ["boolean", json(true)],
      ["not json", { status: 200, body: "stats: fine" }],
      ["no body", { status: 204, body: "" }],
    ];
    const expected: StatsEntry[] = [];
    const asked: Array<[ScriptedWorker, string]> = [];
    for (const [name, answer] of answers) {
      const w = await scripted(answer);
      const sid = await w.register(viaApp(pb), token, { clientId: `unreachable-${name}`, namespaces: ["/su"] });
      asked.push([w, sid]);
      expected.push({ sessionId: sid, clientId: `unreachable-${name}`, hostname: null, error: "unreachable" });
    }
    // A worker whose process is gone (its port closed) while its lease still runs.
    const gone = await scripted(json({ alive: true }));
    const goneSid = await gone.register(viaApp(pb), token, { clientId: "unreachable-gone", namespaces: ["/su"] });
    await gone.close();
    expected.push({ sessionId: goneSid, clientId: "unreachable-gone", hostname: null, error: "unreachable" });
    // … and one that answers an object, beside them.
    const fine = await scripted(json({}));
    const fineSid = await fine.register(viaApp(pb), token, { clientId: "reachable-empty-object", namespaces: ["/su"] });
    expected.push({ sessionId: fineSid, clientId: "reachable-empty-object", hostname: null, stats: {} });

    const res = await stats(await op(["/su"]));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ workers: bySession(expected) });
    expect(target.statsCalls).toEqual([]);
    // Each scripted worker was asked once, attested for its session: the answer alone made it unreachable.
    for (const [w, sid] of asked) expect(w.statsCalls).toEqual([{ aud: sid }]);
    expect(fine.statsCalls).toEqual([{ aud: fineSid }]);
  });

  it("for a worker that never answers, after the 3 s timeout; a worker answering within it is relayed", async () => {
    const hung = await scripted({ hang: true });
    const hungSid = await hung.register(viaApp(pb), token, { clientId: "stats-hung", namespaces: ["/st"] });
    const slow = await scripted({ delayMs: 1500, answer: json({ slow: true }) });
    const slowSid = await slow.register(viaApp(pb), token, { clientId: "stats-slow", namespaces: ["/st"] });

    const res = await stats(await op(["/st"]));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      workers: bySession([
        { sessionId: hungSid, clientId: "stats-hung", hostname: null, error: "unreachable" },
        { sessionId: slowSid, clientId: "stats-slow", hostname: null, stats: { slow: true } },
      ]),
    });
    expect(hung.statsCalls).toEqual([{ aud: hungSid }]);
    // Not before the contract's 3 s (less timer slack), and well before forever: 3 s plus a
    // generous margin for a loaded machine.
    expect(res.ms).toBeGreaterThanOrEqual(2900);
    expect(res.ms).toBeLessThan(3000 + 5000);
  });
});

describe("GET /registry/stats calls at most 8 workers at once", () => {
  it("10 workers holding their answer: 8 calls in flight, the other 2 once answers come back", async () => {
    const tracker = new InflightTracker();
    const expected: StatsEntry[] = [];
    // Each answers 1.5 s after it is asked (inside the 3 s timeout). The tracker counts a call
    // out of flight when its answer is written, before Pinboard can read it and start the next.
    for (let i = 0; i < 10; i++) {
      const w = await scripted({ delayMs: 1500, answer: json({ worker: i }) }, tracker);
      const sid = await w.register(viaApp(pb), token, { clientId: `stats-conc-${i}`, namespaces: ["/sconc"] });
      expected.push({ sessionId: sid, clientId: `stats-conc-${i}`, hostname: null, stats: { worker: i } });
    }
    const res = await stats(await op(["/sconc"]));
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ workers: bySession(expected) });
    expect(tracker.total).toBe(10);
    expect(tracker.max).toBe(8);
    expect(tracker.inflight).toBe(0);
    for (const w of workers) expect(w.statsCalls).toHaveLength(1);
    // Two rounds of 1.5 s: the last two calls waited for a free slot.
    expect(res.ms).toBeGreaterThanOrEqual(2900);
  });
});
