import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Echo } from "../../../support/echo-instance.ts";
import { type Fleet, startFleet } from "../../../support/fleet.ts";
import { type PinboardProcess, startPinboardProcess } from "../../../support/pinboard-process.ts";
import { startTestRedis } from "../../../support/redis.ts";

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({ workers: 2, env: { PINBOARD_BASE_PATH: "/pb" } });
  await fleet.skipColdStart();
});
afterAll(() => fleet.close());

const root = () => fleet.pb.url.replace(/\/pb$/, "");
const scrape = async (token?: string) =>
  fetch(`${root()}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });

/** GET /metrics of a Pinboard process with its operator credential: the status and JSON body of a refusal. */
async function operatorScrape(pb: PinboardProcess): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${pb.url}/metrics`, {
    headers: { authorization: `Bearer ${await pb.operatorCredential()}` },
  });
  return { status: res.status, body: await res.json() };
}

type Family = {
  name: string;
  type: string;
  metrics: Array<{ labels?: Record<string, string>; value?: string; buckets?: Record<string, string>; count?: string }>;
};

/** The value of the sample of `name` whose labels include `labels`; NaN when there is none. */
function sampleOf(byName: Map<string, Family>, name: string, labels: Record<string, string>): number {
  return Number(
    byName.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v))?.value,
  );
}

describe("GET /metrics (Node entry)", () => {
  it("serves Prometheus text that a real parser accepts, outside the base path", async () => {
    for (let i = 0; i < 5; i++) expect((await fetch(`${fleet.pb.url}/echo/m-${i}`)).status).toBe(200);
    expect((await fetch(`${fleet.pb.url}/nowhere/x`)).status).toBe(404);
    const res = await scrape(await fleet.pb.operatorCredential());
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusTextFormat(await res.text()) as Family[];
    const byName = new Map(families.map((f) => [f.name, f]));
    const value = (name: string, labels: Record<string, string>) => sampleOf(byName, name, labels);

    expect(value("pinboard_resolutions_total", { outcome: "forward" })).toBe(5);
    expect(value("pinboard_resolutions_total", { outcome: "unknown-ns" })).toBe(1);
    expect(value("pinboard_forwards_total", { status_class: "2xx" })).toBe(5);
    expect(byName.get("pinboard_forward_duration_seconds")?.type).toBe("HISTOGRAM");
    expect(byName.get("pinboard_redis_script_duration_seconds")?.type).toBe("HISTOGRAM");
    expect(value("pinboard_workers", { state: "live" })).toBe(2);
    expect(value("pinboard_workers", { state: "draining" })).toBe(0);
    expect(value("pinboard_placements", { namespace: "/echo" })).toBe(5);
    expect(byName.has("pinboard_wakes_parked")).toBe(true);
    expect(byName.has("pinboard_connections")).toBe(true);
    expect(byName.has("pinboard_process_resident_memory_bytes")).toBe(true);
  });

  it("tells the forwards Pinboard answered itself from a worker's own 502", async () => {
    const operator = await fleet.pb.operatorCredential();
    const families = async () =>
      new Map((parsePrometheusTextFormat(await (await scrape(operator)).text()) as Family[]).map((f) => [f.name, f]));
    const before = await families();
    const own = await fetch(`${fleet.pb.url}/echo/m-own?status=502`);
    expect(own.status).toBe(502);
    await own.arrayBuffer();
    // The only worker of /gone is registered but no longer listening: Pinboard answers 502 itself.
    const gone = await fleet.addWorker({ namespaces: { "/gone": Echo } });
    await gone.listening.close();
    const unreachable = await fetch(`${fleet.pb.url}/gone/g1`);
    expect(unreachable.status).toBe(502);
    expect(await unreachable.text()).toBe("bad gateway");

    const after = await families();
    // A labelled counter has no sample before its first count (NaN here): read it as 0.
    const grew = (name: string, labels: Record<string, string>) =>
      (sampleOf(after, name, labels) || 0) - (sampleOf(before, name, labels) || 0);
    expect(grew("pinboard_forwards_total", { status_class: "5xx" })).toBe(2);
    expect(grew("pinboard_forward_failures_total", { reason: "unreachable" })).toBe(1);
    expect(grew("pinboard_forward_failures_total", { reason: "timeout" })).toBe(0);
    expect(after.get("pinboard_forward_failures_total")?.type).toBe("COUNTER");
    await gone.stop();
  });

  it("needs an operator credential with an unrestricted policy", async () => {
    expect((await scrape()).status).toBe(401);
    expect(await (await scrape()).json()).toEqual({ error: "unauthorized" });
    expect((await scrape(await fleet.pb.workerCredential())).status).toBe(403);
    for (const claim of [{ namespaces: ["/echo"] }, { hostnames: ["a.example"] }, { envs: ["prod"] }]) {
      const res = await scrape(await fleet.pb.operatorCredential(claim));
      expect(res.status).toBe(403);
      expect(await res.json()).toEqual({ error: "forbidden" });
    }
    expect((await scrape(await fleet.pb.operatorCredential({ hostnames: ["*"], envs: ["*"] }))).status).toBe(200);
  });

  it("never shows a worker secret", async () => {
    const text = await (await scrape(await fleet.pb.operatorCredential())).text();
    for (const w of fleet.workers) expect(text).not.toContain(w.worker.secret);
  });

  it("is 500 metrics collection failed when the fleet cannot be read", async () => {
    const t = await startTestRedis();
    const pb = await startPinboardProcess({ redis: t });
    try {
      await t.stopServer();
      expect(await operatorScrape(pb)).toEqual({ status: 500, body: { error: "metrics collection failed" } });
    } finally {
      await pb.stop();
      await t.stop();
    }
  });

  it("is 404 unknown namespace without a metrics registry", async () => {
    const pb = await startPinboardProcess({
      redis: fleet.t,
      env: { PINBOARD_METRICS: "false", PINBOARD_PREFIX: "nometrics:" },
    });
    try {
      expect(await operatorScrape(pb)).toEqual({ status: 404, body: { error: "unknown namespace" } });
    } finally {
      await pb.stop();
    }
  });
});
