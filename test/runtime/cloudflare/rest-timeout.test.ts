import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ChallengeServer, startChallengeServer } from "../../support/challenge-server.ts";
import { type HangProxy, startHangProxy } from "../../support/hang-proxy.ts";
import { credential } from "../../support/pinboard-app.ts";
import { startTestRedis, type TestRedis } from "../../support/redis.ts";
import { registerBody } from "../../support/registration.ts";
import { startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";

/**
 * The Workers entry when its REST endpoint stops answering: every REST request carries the
 * deadline PINBOARD_REDIS_TIMEOUT_MS (as every Redis command does on Node), and a request that
 * needs Redis answers 503 `{"error":"redis unavailable, retry"}` instead of hanging until the
 * client gives up. The endpoint here accepts the connection and never answers.
 */

let t: TestRedis;
let wk: WorkersEntry;
let proxy: HangProxy | undefined;
let worker: ChallengeServer;
let token: string;

beforeAll(async () => {
  t = await startTestRedis();
  [worker, token] = await Promise.all([startChallengeServer(), credential("pinboard:worker")]);
  wk = await startWorkersEntry({
    redis: t,
    // The default PINBOARD_REDIS_TIMEOUT_MS (2 s): long enough for a register over a loaded cluster bridge.
    env: { PINBOARD_VERIFY_TIMEOUT_MS: "1000", PINBOARD_LOG_LEVEL: "error" },
    restUrl: async (bridge) => {
      proxy = await startHangProxy(bridge.port);
      return proxy.url;
    },
  });
});
afterAll(async () => {
  await wk?.stop();
  await proxy?.close();
  await worker?.close();
  await t?.stop();
});

/** Far past the Redis timeout: a request still open then hangs. */
const clientGivesUp = () => AbortSignal.timeout(20_000);
const register = () =>
  fetch(`${wk.url}/registry/register`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(registerBody(worker)),
    signal: clientGivesUp(),
  });

describe("the Workers entry with a REST endpoint that never answers", () => {
  it("answers register and a forward 503 redis unavailable, retry", async () => {
    expect((await register()).status).toBe(200);

    proxy!.hanging = true;
    const registered = await register();
    expect(registered.status).toBe(503);
    expect(await registered.json()).toEqual({ error: "redis unavailable, retry" });
    const forwarded = await fetch(`${wk.url}/threads/t1`, { signal: clientGivesUp() });
    expect(forwarded.status).toBe(503);
    expect(await forwarded.json()).toEqual({ error: "redis unavailable, retry" });

    // The endpoint answers again: so does Pinboard.
    proxy!.hanging = false;
    expect((await register()).status).toBe(200);
  }, 60_000);
});
