import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createWorker } from "../../src/pinned/index.ts";
import type { Listening } from "../../src/pinned/node-server.ts";
import { Echo } from "../support/echo-instance.ts";
import { startLatencyProxyFor } from "../support/latency-proxy.ts";
import { type PinboardProcess, startPinboardProcess } from "../support/pinboard-process.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let t: TestRedis;
let proxy: { delayMs: number; close(): Promise<void> };
let pb: PinboardProcess;
let listening: Listening;
let stopWorker: () => Promise<void>;

beforeAll(async () => {
  t = await startTestRedis();
  // Pinboard reaches Redis only through the latency proxy (one per node of a cluster); its
  // commands time out after 500 ms.
  const through = await startLatencyProxyFor(t);
  proxy = through.proxy;
  pb = await startPinboardProcess({
    redis: through.target,
    env: { PINBOARD_REDIS_TIMEOUT_MS: "500", PINBOARD_LEASE_TTL_MS: "60000" },
  });
  const worker = createWorker({
    pinboardUrl: pb.url,
    credential: await pb.workerCredential(),
    namespaces: { "/echo": Echo },
    logger: { info: () => {}, warn: () => {}, error: () => {} },
  });
  listening = await worker.listen({ port: 0 });
  await worker.start();
  stopWorker = () => worker.stop();
  for (let b = 0; b < 16; b++) await t.redis.client.set(`pinboard:{${b}}:boot_time`, "0");
});
afterAll(async () => {
  proxy.delayMs = 0;
  await stopWorker();
  await listening.close();
  await pb.stop();
  await proxy.close();
  await t.stop();
});

const timed = async (path: string) => {
  const started = Date.now();
  const res = await fetch(`${pb.url}${path}`);
  const body = await res.text();
  return { status: res.status, body, ms: Date.now() - started, retryAfter: res.headers.get("retry-after") };
};

describe("a slow Redis (latency added on loopback)", () => {
  it("serves normally with latency under the timeout", async () => {
    proxy.delayMs = 40;
    for (let i = 0; i < 5; i++) {
      const r = await timed(`/echo/slow-${i}`);
      expect(r.status).toBe(200);
      expect(r.ms).toBeGreaterThanOrEqual(80);
    }
  });

  it("answers 503 redis unavailable within a bounded time when Redis is slower than the timeout", async () => {
    proxy.delayMs = 1500;
    const answers = [];
    for (let i = 0; i < 4; i++) answers.push(await timed(`/echo/slower-${i}`));
    for (const r of answers) {
      expect(r.status).toBe(503);
      expect(JSON.parse(r.body)).toEqual({ error: "redis unavailable, retry" });
      expect(r.retryAfter).toBe("1");
      expect(r.ms).toBeLessThan(3000);
    }
    proxy.delayMs = 0;
    const deadline = Date.now() + 10_000;
    let status = 0;
    while (Date.now() < deadline && status !== 200) {
      status = (await timed("/echo/recovered")).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 200));
    }
    expect(status).toBe(200);
  });
});
