import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fleet, startFleet } from "../support/fleet.ts";
import { rejectedUpgrade } from "../support/ws-client.ts";

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

    // Every answer is the contract's outcome for Redis being unreachable: 503
    // {"error":"redis unavailable, retry"} with Retry-After: 1 (README, Reliability), JSON, and
    // none took longer than PINBOARD_REDIS_TIMEOUT_MS allows. Nothing else is let through.
    const started = Date.now();
    for (let i = 0; i < 20; i++) {
      const t0 = Date.now();
      const res = await fetch(`${fleet.pb.url}/echo/id-${i % 3}`);
      const answer = {
        status: res.status,
        retryAfter: res.headers.get("retry-after"),
        type: res.headers.get("content-type"),
        body: await res.text(),
      };
      expect(answer, `request ${i}`).toEqual({
        status: 503,
        retryAfter: "1",
        type: expect.stringMatching(/^application\/json/),
        body: JSON.stringify({ error: "redis unavailable, retry" }),
      });
      expect(Date.now() - t0).toBeLessThan(6000);
    }
    expect(Date.now() - started).toBeLessThan(60_000);

    // A WebSocket upgrade takes the same path and gets the same answer (never a 500).
    const upgrade = await rejectedUpgrade(`${fleet.pb.url}/echo/id-ws`);
    expect({
      status: upgrade.status,
      retryAfter: upgrade.headers["retry-after"],
      type: upgrade.headers["content-type"],
      body: upgrade.body,
    }).toEqual({
      status: 503,
      retryAfter: "1",
      type: "application/json",
      body: JSON.stringify({ error: "redis unavailable, retry" }),
    });

    const reg = await fetch(`${fleet.pb.url}/registry/workers`, { headers: { authorization: `Bearer ${token}` } });
    expect(reg.status).toBe(503);
    expect(reg.headers.get("retry-after")).toBe("1");
    expect(await reg.json()).toEqual({ error: "redis unavailable, retry" });
    const deadline = Date.now() + 5000;
    let ready = 200;
    let readyBody = "";
    while (Date.now() < deadline && ready !== 503) {
      const res = await fetch(`${fleet.pb.url}/readyz`);
      ready = res.status;
      readyBody = await res.text();
      if (ready !== 503) await new Promise((r) => setTimeout(r, 200));
    }
    // /readyz: empty body, 503 once the node cannot hold the license.
    expect({ status: ready, body: readyBody }).toEqual({ status: 503, body: "" });
    const healthz = await fetch(`${fleet.pb.url}/healthz`);
    expect({ status: healthz.status, body: await healthz.json() }).toEqual({ status: 200, body: { ok: true } });
  });
});
