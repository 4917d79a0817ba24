import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../../../support/local-worker.ts";
import { type PinboardProcess, startPinboardProcess } from "../../../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../../../support/redis.ts";
import { type ScriptedWorker, startScriptedWorker, viaUrl } from "../../../support/scripted-worker.ts";

/**
 * GET /metrics: "The fleet overview behind the collectors is memoized for 5 s." A worker that
 * registers right after a scrape is not in the next scrape's worker gauge; it shows once the
 * memo has expired, never sooner than 5 s after the scrape that took it. /registry/workers,
 * which is not memoized, shows it at once.
 */

let t: TestRedis, pb: PinboardProcess, w: ScriptedWorker;

beforeAll(async () => {
  t = await startTestRedis();
  pb = await startPinboardProcess({ redis: t });
  w = await startScriptedWorker();
});
afterAll(async () => {
  await w?.close();
  await pb?.stop();
  await t?.stop();
});

type Family = { name: string; metrics: Array<{ labels?: Record<string, string>; value?: string }> };

async function liveWorkers(token: string): Promise<number> {
  const res = await fetch(`${pb.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  const gauge = families.find((f) => f.name === "pinboard_workers")?.metrics.find((m) => m.labels?.state === "live");
  expect(gauge).toBeDefined();
  return Number(gauge!.value);
}

async function listed(token: string): Promise<number> {
  const res = await fetch(`${pb.url}/registry/workers`, { headers: { authorization: `Bearer ${token}` } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { workers: unknown[] }).workers.length;
}

describe("GET /metrics memoizes the fleet overview for 5 s", () => {
  it("a worker registered right after a scrape shows in the gauge only once the memo expired", async () => {
    const operator = await pb.operatorCredential();
    const workerToken = await pb.workerCredential();
    await w.register(viaUrl(pb.url), workerToken, { namespaces: ["/metrics-memo"] });

    const first = Date.now();
    expect(await liveWorkers(operator)).toBe(1);
    await w.register(viaUrl(pb.url), workerToken, { namespaces: ["/metrics-memo"] });
    expect(await listed(operator)).toBe(2);
    // The scrape right after: still the memoized overview.
    expect(await liveWorkers(operator)).toBe(1);
    // (The memo could only have expired had these steps taken 5 s; they take milliseconds.)
    expect(Date.now() - first).toBeLessThan(5000);

    // It changes once the memo has expired; the memo was taken after `first`, so not before 5 s.
    await until(async () => (await liveWorkers(operator)) === 2, 20_000, 250);
    expect(Date.now() - first).toBeGreaterThanOrEqual(4900);
  });
});
