import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SPREAD_CACHE } from "../../src/operator/spread-cache.ts";
import { SPREAD_COUNT_BUDGET } from "../../src/operator/spread-count.ts";
import { Keys } from "../../src/redis/keys.ts";
import { credential } from "../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { putRows, type RowFields } from "../support/rows.ts";
import { type ScriptedWorker, startScriptedWorker, viaUrl } from "../support/scripted-worker.ts";
import { type ServedPinboard, startServedPinboard } from "../support/served-pinboard.ts";

/**
 * GET /registry/spread: placements per visible live worker and the rows without a live owner,
 * counted inside Redis (spread-slice-1.lua) over the spaces the claim covers; exact across the
 * slices of a space larger than one call; `complete: false` with the counts of what was counted
 * when the count reaches its budget; each answer kept per claim scope for 10 s of this node's
 * clock (injected here).
 */

const keys = new Keys("pinboard:", 16);
let t: TestRedis;
let pb: ServedPinboard;
let skew = 0;
let a: ScriptedWorker, b: ScriptedWorker, sidA: string, sidB: string;

beforeAll(async () => {
  t = await startTestRedis();
  // A lease longer than the file: the workers stay live without heartbeats.
  pb = await startServedPinboard(t, { env: { PINBOARD_LEASE_TTL_MS: "600000" }, now: () => Date.now() + skew });
  [a, b] = await Promise.all([startScriptedWorker(), startScriptedWorker()]);
  const token = await credential("pinboard:worker");
  sidA = await a.register(viaUrl(pb.url), token, { namespaces: ["/sa", "/sb"] });
  sidB = await b.register(viaUrl(pb.url), token, { namespaces: ["/sa"] });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await pb?.close();
  await t?.stop();
});

interface Spread {
  countedAt: number;
  complete: boolean;
  workers: Array<{ sessionId: string; placements: number }>;
  unowned: number;
}

async function spread(namespaces: string[], claim: Record<string, unknown> = {}): Promise<Spread> {
  const op = await credential("pinboard:operator", { namespaces, ...claim });
  const res = await fetch(`${pb.url}/registry/spread`, { headers: { authorization: `Bearer ${op}` } });
  const text = await res.text();
  expect({ status: res.status, text }).toMatchObject({ status: 200 });
  return expectRouteOk("GET /registry/spread", text) as Spread;
}

/** Rows named `${tag}-${i}` of one namespace. */
function rows(tag: string, n: number, row: RowFields): Array<{ id: string; row: RowFields }> {
  return Array.from({ length: n }, (_, i) => ({ id: `${tag}-${i}`, row }));
}

const bySession = (list: Spread["workers"]) => [...list].sort((x, y) => x.sessionId.localeCompare(y.sessionId));
/** The answer's counts, with countedAt checked against the clock around the request. */
async function counted(namespaces: string[], claim: Record<string, unknown> = {}) {
  const before = Date.now();
  const answer = await spread(namespaces, claim);
  expect(answer.countedAt).toBeGreaterThanOrEqual(before - 2000);
  expect(answer.countedAt).toBeLessThanOrEqual(Date.now() + 2000);
  const { countedAt: _, ...rest } = answer;
  return rest;
}

describe("GET /registry/spread", () => {
  it("counts each visible live worker's placed rows and the unowned ones in the spaces the claim covers", async () => {
    const past = String(Date.now() - 60_000);
    const future = String(Date.now() + 600_000);
    await putRows(t, "/sa", [
      ...rows("sa-a", 1500, { sessionId: sidA, epoch: "3" }),
      ...rows("sa-a-fenced", 25, { sessionId: sidA, epoch: "3", expiry: future, tag: "gold" }),
      ...rows("sa-b", 300, { sessionId: sidB, epoch: "4" }),
      ...rows("sa-gone", 50, { sessionId: "gone", epoch: "5" }),
      ...rows("sa-placeholder", 20, { sessionId: "" }),
      ...rows("sa-a-passed", 10, { sessionId: sidA, epoch: "6", expiry: past }),
    ]);
    await putRows(t, "/sb", [
      ...rows("sb-a", 700, { sessionId: sidA, epoch: "7" }),
      // b is live but does not serve /sb: a claim that sees b counts these for it, one that does not sees them nowhere.
      ...rows("sb-b", 40, { sessionId: sidB, epoch: "8" }),
      ...rows("sb-placeholder", 5, { sessionId: "", hostname: "" }),
    ]);
    // /sc is covered by no claim below.
    await putRows(t, "/sc", rows("sc-a", 60, { sessionId: sidA, epoch: "9" }));

    expect(await counted(["/sa", "/sb"])).toEqual({
      complete: true,
      workers: bySession([
        { sessionId: sidA, placements: 1500 + 25 + 700 },
        { sessionId: sidB, placements: 300 + 40 },
      ]),
      unowned: 50 + 20 + 10 + 5,
    });
    expect(await counted(["/sa"])).toEqual({
      complete: true,
      workers: bySession([
        { sessionId: sidA, placements: 1525 },
        { sessionId: sidB, placements: 300 },
      ]),
      unowned: 80,
    });
    expect(await counted(["/sb"])).toEqual({
      complete: true,
      workers: [{ sessionId: sidA, placements: 700 }],
      unowned: 5,
    });
    expect(await counted(["/nothing"])).toEqual({ complete: true, workers: [], unowned: 0 });
  });

  it("counts a space larger than one script call's budget exactly, in several calls", async () => {
    const ids: string[] = [];
    for (let i = 0; ids.length < SPREAD_COUNT_BUDGET.rowsPerCall + 2000; i++)
      if (keys.bucketOf(`big-${i}`) === 7) ids.push(`big-${i}`);
    await putRows(
      t,
      "/sa",
      ids.map((id) => ({ id, row: { sessionId: "gone", epoch: "1" } })),
    );
    const calls = async () => {
      let n = 0;
      for (const node of await t.primaries()) {
        const info = await node.info("commandstats");
        for (const cmd of ["evalsha", "eval"])
          n += Number(new RegExp(`^cmdstat_${cmd}:calls=(\\d+)`, "m").exec(info)?.[1] ?? 0);
      }
      return n;
    };
    const spaces = (await Promise.all(keys.allBuckets().map((bucket) => t.redis.smembers(keys.spaces(bucket)))))
      .flat()
      .filter((space) => space.endsWith("\n/sa")).length;
    const before = await calls();
    // A scope of its own (hostnames), so the answer above is not the one kept.
    expect(await counted(["/sa"], { hostnames: ["*"] })).toEqual({
      complete: true,
      workers: bySession([
        { sessionId: sidA, placements: 1525 },
        { sessionId: sidB, placements: 300 },
      ]),
      unowned: 80 + ids.length,
    });
    // One call per space of /sa, and more for the large one.
    expect((await calls()) - before).toBeGreaterThan(spaces);
  });

  it("stops at its budget with complete: false and the counts of the spaces it counted", async () => {
    // One dead-owned row in each bucket of each namespace: one space, and one script call, per row.
    const perBucket: string[] = [];
    for (let i = 0; perBucket.length < keys.shards; i++)
      if (keys.bucketOf(`one-${i}`) === perBucket.length) perBucket.push(`one-${i}`);
    const maxSpaces = SPREAD_COUNT_BUDGET.roundTrips * SPREAD_COUNT_BUDGET.callsPerRound;
    const namespaces = Array.from({ length: maxSpaces / keys.shards + 6 }, (_, n) => `/n${String(n).padStart(3, "0")}`);
    for (const ns of namespaces)
      await putRows(
        t,
        ns,
        perBucket.map((id) => ({ id, row: { sessionId: "gone", epoch: "1" } })),
      );

    expect(await counted(namespaces)).toEqual({ complete: false, workers: [], unowned: maxSpaces });
    // Exactly as many spaces as the budget counts: complete.
    expect(await counted(namespaces.slice(0, maxSpaces / keys.shards))).toEqual({
      complete: true,
      workers: [],
      unowned: maxSpaces,
    });
  });

  it("keeps an answer per claim scope for 10 s of this node's clock", async () => {
    await putRows(t, "/kept", rows("kept", 10, { sessionId: "gone", epoch: "1" }));
    const first = await spread(["/kept"]);
    expect(first).toMatchObject({ complete: true, workers: [], unowned: 10 });

    await putRows(t, "/kept", rows("kept-more", 5, { sessionId: "gone", epoch: "1" }));
    expect(await spread(["/kept"])).toEqual(first);
    // Another scope counts now.
    expect(await spread(["/kept"], { envs: ["*"] })).toMatchObject({ unowned: 15 });

    skew += SPREAD_CACHE.ttlMs - 1000;
    expect(await spread(["/kept"])).toEqual(first);
    skew += 1001;
    const later = await spread(["/kept"]);
    expect(later).toMatchObject({ complete: true, workers: [], unowned: 15 });
    expect(later.countedAt).toBeGreaterThan(first.countedAt);
  });
});
