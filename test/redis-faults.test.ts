import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startFleet, type Fleet } from "./support/fleet.ts";

let fleet: Fleet;
beforeAll(async () => {
  fleet = await startFleet({ workers: 1, env: { PINBOARD_LEASE_TTL_MS: "3000" } });
  await fleet.skipColdStart();
});
afterAll(() => fleet.close());

describe("Redis stopped", () => {
  it("answers 503 redis unavailable within a bounded time, /readyz turns 503, and no 500s", async () => {
    expect((await fetch(`${fleet.pb.url}/echo/before`)).status).toBe(200);
    const token = await fleet.pb.operatorCredential();
    await fleet.t.stopServer();

    const statuses: number[] = [];
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      const res = await fetch(`${fleet.pb.url}/echo/id-${i % 3}`);
      statuses.push(res.status);
      expect(Date.now() - t0).toBeLessThan(6000);
      if (res.status === 503) {
        expect(res.headers.get("retry-after")).toBe("1");
        expect(await res.json()).toEqual({ error: "redis unavailable, retry" });
      } else {
        await res.arrayBuffer();
      }
    }
    expect(statuses.filter((s) => s >= 500 && s !== 503)).toEqual([]);
    expect(statuses.filter((s) => s === 503).length).toBeGreaterThan(15);
    expect(Date.now() - started).toBeLessThan(60_000);

    const reg = await fetch(`${fleet.pb.url}/registry/workers`, { headers: { authorization: `Bearer ${token}` } });
    expect(reg.status).toBe(503);
    const deadline = Date.now() + 5000;
    let ready = 200;
    while (Date.now() < deadline && ready !== 503) {
      ready = (await fetch(`${fleet.pb.url}/readyz`)).status;
      await new Promise((r) => setTimeout(r, 200));
    }
    expect(ready).toBe(503);
    expect((await fetch(`${fleet.pb.url}/healthz`)).status).toBe(200);
  });
});
