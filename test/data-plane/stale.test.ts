import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { STALE_RESOLUTION_MS } from "../../src/data-plane/placement-loop.ts";
import { type HostileWorker, startHostileWorker } from "../support/hostile-worker.ts";
import { credential } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { getRow } from "../support/rows.ts";
import { startScriptedWorker, viaUrl } from "../support/scripted-worker.ts";
import { listeningSink, type ServedPinboard, startServedPinboard } from "../support/served-pinboard.ts";

/**
 * "A resolution older than 5 s by the time the forward sends is re-resolved, twice at most."
 *
 * The age of a resolution is judged on the node's injected clock (AppDeps.now), from the moment
 * the resolve script was sent. Here that clock is the wall clock plus a skew, and each resolve
 * script's reply (reported to the metrics sink before the placement loop sees the resolution,
 * exactly where the Node entry's Prometheus registry hears it) moves the skew forward by what the
 * test says that resolve "took": a Redis that answers that slowly, as seen by the node. The same
 * sink counts the resolve scripts the request ran. The worker is real (hostile-worker.ts: it
 * answers 200 and lists every forward it received) and Redis is real.
 */

let t: TestRedis, pb: ServedPinboard, worker: HostileWorker, sessionId: string;

const clock = { skewMs: 0 };
/** How long (ms, on the node's clock) the n-th resolve of the current test takes (n from 0). */
let took: (n: number) => number = () => 0;
let resolves = 0;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startServedPinboard(t, {
    now: () => Date.now() + clock.skewMs,
    metrics: listeningSink({
      script(name) {
        if (name !== "resolve") return;
        clock.skewMs += took(resolves);
        resolves++;
      },
    }),
  });
  await endColdStart(t);
  worker = await startHostileWorker();
  sessionId = await worker.register(pb.url, await credential("pinboard:worker"), "/stale");
});
afterAll(async () => {
  await worker?.close();
  await pb?.close();
  await t?.stop();
});
beforeEach(() => {
  took = () => 0;
  resolves = 0;
});

interface Echoed {
  method: string;
  headers: Record<string, string>;
  bodyBytes: number;
}

/** One GET through the served app; what the client got, how many resolves it ran, what reached the worker. */
async function get(id: string) {
  const seenBefore = worker.seen.length;
  const forwardsBefore = pb.deps.counters.resolutions.forward ?? 0;
  const res = await fetch(`${pb.url}/stale/${id}`);
  const body = (await res.json()) as Echoed;
  return {
    status: res.status,
    body,
    resolves,
    reached: worker.seen.slice(seenBefore).filter((s) => s.url === `/stale/${id}`),
    forwardOutcomes: (pb.deps.counters.resolutions.forward ?? 0) - forwardsBefore,
  };
}

describe("a resolution older than 5 s when the forward is about to leave", () => {
  it("is re-resolved twice at most: three resolves, then the forward goes out once, at the row's epoch", async () => {
    took = () => STALE_RESOLUTION_MS + 1000;
    const r = await get("stale-always");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ method: "GET", bodyBytes: 0 });
    expect(r.resolves).toBe(3);
    expect(r.reached).toHaveLength(1);
    const row = await getRow(t, "/stale", "stale-always");
    expect(row).toMatchObject({ sessionId, epoch: expect.stringMatching(/^\d+$/) });
    expect(r.reached[0]!.headers["pinboard-epoch"]).toBe(row!.epoch);
    expect(r.body.headers["pinboard-epoch"]).toBe(row!.epoch);
    // One request, one resolution outcome, however many resolves it took.
    expect(r.forwardOutcomes).toBe(1);
  });

  const stale = STALE_RESOLUTION_MS + 1000;
  it.each<[name: string, id: string, resolveCount: number, tookMs: (n: number) => number]>([
    [
      "a stale first resolution is resolved once more; the fresh second one is forwarded",
      "stale-once",
      2,
      (n) => (n === 0 ? stale : 0),
    ],
    [
      "two stale resolutions, then a fresh third: three resolves, one forward",
      "stale-twice",
      3,
      (n) => (n < 2 ? stale : 0),
    ],
    [
      "a resolution well under 5 s old is forwarded as it is: one resolve",
      "quick",
      1,
      () => STALE_RESOLUTION_MS - 3000,
    ],
  ])("%s", async (_name, id, resolveCount, tookMs) => {
    took = tookMs;
    const r = await get(id);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ method: "GET", bodyBytes: 0 });
    expect(r.resolves).toBe(resolveCount);
    expect(r.reached).toHaveLength(1);
    expect(r.reached[0]!.headers["pinboard-epoch"]).toBe((await getRow(t, "/stale", id))!.epoch);
    expect(r.forwardOutcomes).toBe(1);
  });
});

describe("a stale resolution after a worker refused activation", () => {
  it("still excludes the refusing worker: each worker gets one forward, then 503 worker refused activation", async () => {
    const [a, b] = await Promise.all([startScriptedWorker(), startScriptedWorker()]);
    try {
      const token = await credential("pinboard:worker");
      for (const w of [a, b]) {
        w.forward = "refuse";
        await w.register(viaUrl(pb.url), token, { namespaces: ["/refusing"] });
      }
      // Resolve 0 places at one worker, which refuses; resolve 1 (excluding it) places at the
      // other but comes back stale; resolve 2 must still exclude the first.
      took = (n) => (n === 1 ? STALE_RESOLUTION_MS + 1000 : 0);
      const nacksBefore = pb.deps.counters.resolutions.nack ?? 0;
      const res = await fetch(`${pb.url}/refusing/r1`);
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toEqual({ error: "worker refused activation, retry" });
      expect(resolves).toBe(3);
      const reached = (w: typeof a) => w.forwards.filter((f) => f.url === "/refusing/r1").length;
      expect([reached(a), reached(b)]).toEqual([1, 1]);
      expect((pb.deps.counters.resolutions.nack ?? 0) - nacksBefore).toBe(2);
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
