import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { flushIntervalMs } from "../../../src/placement/spend-sync.ts";
import { Echo } from "../../support/echo-instance.ts";
import type { WorkersEntry } from "../../support/workerd-entry.ts";
import { startWorkersFleet, type WorkersFleet } from "../../support/workers-fleet.ts";

/**
 * What a forward costs a Workers user in subrequests (the Free plan allows 50 per request): a
 * forward to an instance that keeps its owner makes one Redis call (one REST request) and one
 * fetch to the worker, nothing else; a new placement makes one resolve call and the forward, and
 * the spend sync (placement/spend-sync.ts: two round trips, at most once per flush interval, for
 * all the placements made meanwhile). Counted at the REST bridge and at the worker, with a lease
 * long enough that no heartbeat lands in between.
 */

const FORWARDS = 20;
/** The spend sync's flush interval with the default 16 shards. */
const INTERVAL_MS = flushIntervalMs(16);

let fleet: WorkersFleet;
let entry: WorkersEntry;
/** Requests the worker's instances served, all ids together. */
let served = 0;

class CountingEcho extends Echo {
  override async fetch(request: Request, ctx: Parameters<Echo["fetch"]>[1]): Promise<Response> {
    served++;
    return super.fetch(request, ctx);
  }
}

beforeAll(async () => {
  fleet = await startWorkersFleet({ namespaces: { "/echo": CountingEcho }, env: { PINBOARD_LEASE_TTL_MS: "600000" } });
  ({ entry } = fleet);
});
afterAll(() => fleet?.stop());

async function forward(id: string): Promise<void> {
  const res = await fetch(`${entry.url}/echo/${id}`);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

describe("subrequests per forward on the Workers entry", () => {
  it("a hot forward: one Redis call and one worker fetch", async () => {
    await forward("hot-1");
    // The isolate's own first-use work (the fleet claim, script loads) is done by now, and the
    // placement's spend sync (two round trips, within an interval) has run.
    await forward("hot-1");
    await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_MS));
    const redisBefore = entry.bridge.requests();
    const servedBefore = served;
    for (let i = 0; i < FORWARDS; i++) await forward("hot-1");
    expect(served - servedBefore).toBe(FORWARDS);
    expect(entry.bridge.requests() - redisBefore).toBe(FORWARDS);
  });

  it("a new placement: one Redis call for the resolve, the forward, and the spend sync at most once per interval", async () => {
    await forward("warm-up");
    await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_MS));
    const redisBefore = entry.bridge.requests();
    const servedBefore = served;
    const started = Date.now();
    for (let i = 0; i < FORWARDS; i++) await forward(`new-${i}`);
    // The last sync runs after the last placement, within an interval.
    await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_MS));
    const intervals = Math.ceil((Date.now() - started) / INTERVAL_MS);
    expect(served - servedBefore).toBe(FORWARDS);
    const syncRoundTrips = entry.bridge.requests() - redisBefore - FORWARDS;
    expect(syncRoundTrips % 2).toBe(0);
    expect(syncRoundTrips).toBeGreaterThanOrEqual(2);
    expect(syncRoundTrips / 2).toBeLessThanOrEqual(Math.min(FORWARDS, intervals + 1));
  });
});
