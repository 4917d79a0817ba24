/**
 * One cron pass of the Workers entry (in workerd through Miniflare, @upstash/redis over the real
 * REST bridge) against a backlog of 1,000 placements whose owner died: a real worker process
 * served them through the data plane, then was SIGKILLed. Every pass keeps within the subrequest
 * budget (45 by default, under the Workers Free plan's 50), counted from outside: the HTTP
 * requests that reached the bridge (a pipeline is one) plus the calls that reached the worker.
 * A due alarm fires in the first pass despite the backlog, and later passes work the backlog off,
 * each resuming where the last stopped.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { durableStore } from "../support/durability.ts";
import { credential } from "../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody } from "../support/registration.ts";
import { spawnWorkerProcess } from "../support/spawn-worker.ts";
import { startWorkersEntry, type WorkersEntry } from "../support/workerd-entry.ts";

const BACKLOG = 1000;
const BUDGET = 45;
const LEASE = 3000;
const NS = "/counter";

let t: TestRedis;
let wk: WorkersEntry;
/** The live worker of the namespace: answers _wake and _alarm 200 {"fired":true}, and counts every call. */
let live: ChallengeServer;
const keys = new Keys("pinboard:", 16);

beforeAll(async () => {
  t = await startTestRedis();
  wk = await startWorkersEntry({
    redis: t,
    env: { PINBOARD_LEASE_TTL_MS: String(LEASE), PINBOARD_LOG_LEVEL: "error" },
  });
  live = await startChallengeServer();
  live.instanceCalls = { status: 200, body: { fired: true } };
}, 60_000);
afterAll(async () => {
  await wk?.stop();
  await live?.close();
  await t?.stop();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The subrequests of one scheduled() pass, counted where they arrive. */
async function countedPass(): Promise<number> {
  const [rest, calls] = [wk.bridge.requests(), live.seen.length];
  await wk.scheduled();
  return wk.bridge.requests() - rest + (live.seen.length - calls);
}

async function overwrittenMarkers(): Promise<number> {
  let n = 0;
  for (const b of keys.allBuckets()) n += await t.redis.client.hlen(keys.overwritten(b));
  return n;
}

/**
 * GET {ns}/{id} through the Workers entry for every id, a few at a time. A 503 refusal (the
 * worker's headroom spent until its next heartbeat) is asked again shortly after.
 */
async function placeAll(ids: string[]): Promise<void> {
  const place = async (id: string): Promise<number> => {
    for (let attempt = 0; ; attempt++) {
      const res = await fetch(`${wk.url}${NS}/${id}`);
      await res.arrayBuffer();
      if (res.status !== 503 || attempt === 40) return res.status;
      await sleep(250);
    }
  };
  for (let i = 0; i < ids.length; i += 25) {
    expect(new Set(await Promise.all(ids.slice(i, i + 25).map(place)))).toEqual(new Set([200]));
  }
}

/** Renews the live worker's lease (the passes outlast it), outside the counted passes. */
async function heartbeat(sessionId: string, auth: string): Promise<void> {
  const res = await fetch(`${wk.url}/registry/heartbeat`, {
    method: "POST",
    headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
    body: JSON.stringify(heartbeatBody(live, sessionId)),
  });
  expect(res.status).toBe(200);
}

describe("a cron pass with a backlog of placements whose owner died", () => {
  it("keeps within the subrequest budget, fires a due alarm first, and later passes clear the backlog", async () => {
    const auth = await credential("pinboard:worker");
    const owner = await spawnWorkerProcess("shutdown-worker-main.ts", {
      PINBOARD_URL: wk.url,
      CREDENTIAL: auth,
      CLIENT_ID: "backlog-owner",
      MAX_INSTANCES: String(2 * BACKLOG),
    });
    await endColdStart(t, keys);
    const ids = Array.from({ length: BACKLOG }, (_, i) => `b-${i}`);
    await placeAll(ids);
    await owner.kill();

    // Every twentieth instance is durable (indexed as the worker library indexes an activation), so
    // a wake places it at the live worker and calls it; the rest are dropped without a call.
    const store = durableStore(t);
    const durableIds = ids.filter((_, i) => i % 20 === 0);
    for (const id of durableIds) await store.activate({ ns: NS, id }, "1");
    // And one instance whose alarm is due.
    const alarmed = { ns: NS, id: "alarmed" };
    await store.activate(alarmed, "1");
    await store.setAlarm(alarmed, "1", Date.now() - 1000);
    await store.close();
    await sleep(LEASE + 1000); // the owner's lease has run out: every one of its rows is an orphan

    const registered = await fetch(`${wk.url}/registry/register`, {
      method: "POST",
      headers: { authorization: `Bearer ${auth}`, "content-type": "application/json" },
      body: JSON.stringify(registerBody(live, { namespaces: [NS] })),
    });
    expect(registered.status).toBe(200);
    const { sessionId } = (await registered.json()) as { sessionId: string };
    const calls = (action: string) =>
      live.seen.filter((r) => r.method === "POST" && r.url.endsWith(`/${action}`)).map((r) => r.url);

    const first = await countedPass();
    expect(first).toBeLessThanOrEqual(BUDGET);
    expect(calls("_alarm")).toEqual([`${NS}/alarmed/_alarm`]);
    expect(calls("_wake").length).toBeLessThan(durableIds.length);

    // Later passes resume where the last stopped until every bucket's rows were listed and every
    // marker handled, each pass within the budget.
    const counts = [first];
    let scannedAll = false;
    while (!scannedAll || (await overwrittenMarkers()) > 0) {
      if (counts.length >= 40) throw new Error(`backlog not cleared after ${counts.length} passes: ${counts}`);
      await heartbeat(sessionId, auth);
      counts.push(await countedPass());
      const cursor = (await t.redis.client.get("pinboard:{global}:orphan-cursor")) ?? "";
      // The orphan scan came round to bucket 0 again after the last bucket.
      scannedAll ||= cursor.startsWith("0\n");
    }
    expect(Math.max(...counts)).toBeLessThanOrEqual(BUDGET);
    expect(await overwrittenMarkers()).toBe(0);
    // Each durable instance woken (once, at the live worker), no other id called.
    expect(calls("_wake").sort()).toEqual(durableIds.map((id) => `${NS}/${id}/_wake`).sort());
  }, 240_000);
});
