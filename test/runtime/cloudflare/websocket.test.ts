import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { credential } from "../../support/pinboard-app.ts";
import { endColdStart, startTestRedis, type TestRedis } from "../../support/redis.ts";
import { type SocketWorker, startSocketWorker } from "../../support/socket-worker.ts";
import { startWorkersEntry, type WorkersEntry } from "../../support/workerd-entry.ts";
import { eventually, openSocket, rejectedUpgrade } from "../../support/ws-client.ts";

/**
 * What the WebSocket cap counts on the Workers entry (inside workerd): the runtime proxies an
 * accepted socket itself and tells Pinboard nothing of its close, so an upgrade holds its
 * WebSocket slot from the forward to the worker's 101, and an HTTP forward never waits on it.
 */
let t: TestRedis, entry: WorkersEntry, worker: SocketWorker;

beforeAll(async () => {
  t = await startTestRedis();
  entry = await startWorkersEntry({
    redis: t,
    env: { PINBOARD_MAX_WEBSOCKETS: "1", PINBOARD_MAX_INFLIGHT: "1", PINBOARD_LEASE_TTL_MS: "600000" },
  });
  worker = await startSocketWorker(entry.url, await credential("pinboard:worker"), "/sock");
  await endColdStart(t);
}, 60_000);
afterAll(async () => {
  await worker?.close();
  await entry?.stop();
  await t?.stop();
});

const url = (path: string) => `${entry.url}${path}`;

describe("the WebSocket cap on the Workers entry", () => {
  it("holds a WebSocket slot through the handshake: a second upgrade meanwhile is refused, HTTP is not", async () => {
    const slow = openSocket(url("/sock/slow-1?ms=1500"));
    await eventually(() => worker.upgrades.includes("slow-1"));
    const refused = await rejectedUpgrade(url("/sock/second-1"));
    expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual({
      status: 503,
      body: { error: "worker inflight cap exceeded, retry" },
    });
    expect(refused.headers["retry-after"]).toBe("1");
    const http = await fetch(url("/sock/http-1"));
    expect(http.status).toBe(200);
    expect(await http.json()).toMatchObject({ ok: true });

    const socket = await slow;
    const bytes = Buffer.from([1, 2, 3]);
    socket.ws.send(bytes);
    expect((await socket.next()).data.equals(bytes)).toBe(true);
    socket.ws.close(1000);
    await socket.closed;
  });

  it("gives the slot back at the 101: an open socket is not counted", async () => {
    const first = await openSocket(url("/sock/open-1"));
    const second = await openSocket(url("/sock/open-2"));
    await eventually(() => worker.open().includes("open-1") && worker.open().includes("open-2"));
    for (const socket of [first, second]) {
      socket.ws.close(4000, "done");
      expect(await socket.closed).toEqual({ code: 4000, reason: "done" });
    }
  });
});

describe("a worker's 101 on the Workers entry", () => {
  it("reaches the client without Pinboard-*, Pinned-Refusal or Service-Worker-Allowed, as on the Node entry", async () => {
    const ws = new WebSocket(url("/sock/leaky-1").replace(/^http/, "ws"));
    const headers = await new Promise<Record<string, string | string[] | undefined>>((resolve, reject) => {
      ws.on("upgrade", (res) => resolve(res.headers));
      ws.on("error", reject);
    });
    ws.close(1000);
    expect(headers["x-kept"]).toBe("yes");
    expect(headers["x-accel-buffering"]).toBe("no");
    expect([headers["service-worker-allowed"], headers["pinboard-epoch"], headers["pinned-refusal"]]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
  });
});
