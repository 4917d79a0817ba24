import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Keys, SINGLE_HOSTNAME } from "../../src/redis/keys.ts";
import { type ChallengeServer, startChallengeServer } from "../support/challenge-server.ts";
import { until } from "../support/local-worker.ts";
import type { TestPinboard } from "../support/pinboard-app.ts";
import { endColdStart, type TestRedis } from "../support/redis.ts";
import { heartbeatBody, registerBody, registerOk } from "../support/registration.ts";
import { useAwareRegistryFixture } from "../support/registry-fixture.ts";

/**
 * "Heartbeat re-adds the worker to every namespace list in its bucket" — what
 * test/placement/ns-list-copy.test.ts leaves out: the lists of every bucket lost at once (so no
 * bucket has one to copy and the data plane answers 404 unknown namespace), a heartbeat re-adding
 * its own worker only (another worker of the namespace comes back with its own heartbeat), and
 * the {hostname}{ns} lists of hostname-aware mode. Checked on the lists and through the data
 * plane: the request reaches the worker (a challenge server answers any other path with its own
 * 404 {"detail":"not found"}, which Pinboard relays).
 */

let t: TestRedis;
let single: TestPinboard;
let aware: TestPinboard;
let a: ChallengeServer;
let b: ChallengeServer;
let token: string;

const singleKeys = new Keys("pinboard:", 16);
const awareKeys = new Keys("aware:", 16);

useAwareRegistryFixture((f) => ({ t, pb: single, aware, worker: a, token } = f));
// Both fleets past their cold start, and a second worker (closed before the fixture's teardown).
beforeAll(async () => {
  await endColdStart(t, singleKeys);
  await endColdStart(t, awareKeys);
  b = await startChallengeServer();
});
afterAll(async () => {
  await b?.close();
});

async function loseEveryList(keys: Keys, hostname: string, ns: string): Promise<void> {
  for (const bucket of keys.allBuckets())
    for (const key of keys.nsListKeys(bucket, hostname, ns)) await t.redis.client.del(key);
}

/** Every bucket's list of {hostname}{ns}: sessionId → [headroom, flags]. */
async function lists(keys: Keys, hostname: string, ns: string): Promise<Array<Record<string, [string, string]>>> {
  const out: Array<Record<string, [string, string]>> = [];
  for (const bucket of keys.allBuckets()) {
    const raw = await t.redis.client.hgetall(keys.nsWorkers(bucket, hostname, ns));
    const list: Record<string, [string, string]> = {};
    for (const [sid, entry] of Object.entries(raw)) {
      const [, headroom = "", flags = ""] = entry.split("\n");
      list[sid] = [headroom, flags];
    }
    out.push(list);
  }
  return out;
}

const everyBucket = <T>(value: T): T[] => Array.from({ length: 16 }, () => value);

async function heartbeatOk(
  pb: TestPinboard,
  worker: ChallengeServer,
  sessionId: string,
  headroom: number,
): Promise<void> {
  const res = await pb.call("POST", "/registry/heartbeat", {
    token,
    body: heartbeatBody(worker, sessionId, { headroom }),
  });
  expect(res.status).toBe(200);
  expect(await res.json()).toEqual({ expiresInMs: 15000, draining: false });
}

describe("single mode: every bucket lost the namespace list", () => {
  it("the namespace is unknown until a heartbeat re-adds its worker in every bucket; each worker re-adds only itself", async () => {
    const x = await registerOk(single, token, registerBody(a, { namespaces: ["/relist"] }));
    const y = await registerOk(single, token, registerBody(b, { namespaces: ["/relist"] }));
    await loseEveryList(singleKeys, SINGLE_HOSTNAME, "/relist");
    expect(await lists(singleKeys, SINGLE_HOSTNAME, "/relist")).toEqual(everyBucket({}));

    const lost = await single.call("GET", "/relist/r1");
    expect(lost.status).toBe(404);
    expect(await lost.json()).toEqual({ error: "unknown namespace" });

    await heartbeatOk(single, a, x.sessionId, 42);
    expect(await lists(singleKeys, SINGLE_HOSTNAME, "/relist")).toEqual(everyBucket({ [x.sessionId]: ["42", ""] }));

    const seen = a.seen.length;
    const back = await single.call("GET", "/relist/r1");
    expect(back.status).toBe(404);
    expect(await back.json()).toEqual({ detail: "not found" });
    expect(a.seen.slice(seen).map((s) => s.url)).toEqual(["/relist/r1"]);

    // The placement just made lowers x's entries (its own bucket at once, the others through the
    // spend sync); then y's own heartbeat brings y back, and x stays as it is.
    const spent = JSON.stringify(everyBucket({ [x.sessionId]: ["41", ""] }));
    await until(async () => JSON.stringify(await lists(singleKeys, SINGLE_HOSTNAME, "/relist")) === spent);
    await heartbeatOk(single, b, y.sessionId, 7);
    expect(await lists(singleKeys, SINGLE_HOSTNAME, "/relist")).toEqual(
      everyBucket({ [x.sessionId]: ["41", ""], [y.sessionId]: ["7", ""] }),
    );
  });
});

describe("hostname-aware: every bucket lost the {hostname}{ns} list", () => {
  it("a heartbeat re-adds the worker to its hostname's list in every bucket; another hostname's list stays as it is", async () => {
    const x = await registerOk(
      aware,
      token,
      registerBody(a, { namespaces: ["/relist"], hostname: "alpha.example", env: "blue", epoch: 1 }),
    );
    const y = await registerOk(
      aware,
      token,
      registerBody(b, { namespaces: ["/relist"], hostname: "beta.example", env: "green", epoch: 1 }),
    );
    await loseEveryList(awareKeys, "alpha.example", "/relist");
    expect(await lists(awareKeys, "alpha.example", "/relist")).toEqual(everyBucket({}));
    expect(await lists(awareKeys, "beta.example", "/relist")).toEqual(everyBucket({ [y.sessionId]: ["100", ""] }));

    const lost = await aware.call("GET", "/relist/r1", { headers: { host: "alpha.example" } });
    expect(lost.status).toBe(404);
    expect(await lost.json()).toEqual({ error: "unknown namespace" });

    await heartbeatOk(aware, a, x.sessionId, 55);
    expect(await lists(awareKeys, "alpha.example", "/relist")).toEqual(everyBucket({ [x.sessionId]: ["55", ""] }));
    expect(await lists(awareKeys, "beta.example", "/relist")).toEqual(everyBucket({ [y.sessionId]: ["100", ""] }));

    const seen = a.seen.length;
    const back = await aware.call("GET", "/relist/r1", { headers: { host: "alpha.example" } });
    expect(back.status).toBe(404);
    expect(await back.json()).toEqual({ detail: "not found" });
    expect(a.seen.slice(seen).map((s) => s.url)).toEqual(["/relist/r1"]);
  });
});
