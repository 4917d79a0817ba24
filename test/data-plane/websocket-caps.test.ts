import { describe, expect, it } from "vitest";
import type { PinboardProcess } from "../support/pinboard-process.ts";
import { rawWebSocket } from "../support/raw-ws-client.ts";
import type { TestRedis } from "../support/redis.ts";
import { getRow } from "../support/rows.ts";
import { metricValue } from "../support/scrape.ts";
import type { SocketWorker } from "../support/socket-worker.ts";
import { useSocketWorkerBehindPinboard } from "../support/socket-worker-fixture.ts";
import { eventually, openSocket, rejectedUpgrade, type TestSocket } from "../support/ws-client.ts";

/**
 * Open WebSockets hold a slot of their own per worker (PINBOARD_MAX_WEBSOCKETS), apart from the
 * inflight cap of HTTP forwards, and a peer that stops answering Pinboard's pings is cut, giving
 * its slot back. Through the real Node entry, to one hand-written worker on /sock.
 */
const MAX_INFLIGHT = 8;
const MAX_WEBSOCKETS = 10;
// Long enough that a test process slowed down by a busy machine still answers in time.
const PING_MS = 1000;

let t: TestRedis;
let pb: PinboardProcess;
let worker: SocketWorker;

useSocketWorkerBehindPinboard(
  {
    PINBOARD_MAX_INFLIGHT: String(MAX_INFLIGHT),
    PINBOARD_MAX_WEBSOCKETS: String(MAX_WEBSOCKETS),
    PINBOARD_WS_PING_INTERVAL_MS: String(PING_MS),
  },
  "/sock",
  (f) => ({ t, pb, worker } = f),
);

const url = (path: string) => `${pb.url}${path}`;
const openSockets = () => metricValue(pb, "pinboard_websockets", { session: worker.sessionId });
const closeOf = (id: string) => worker.closes.find((c) => c.id === id);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function closeAll(sockets: TestSocket[]): Promise<void> {
  for (const s of sockets) s.ws.close(1000);
  await Promise.all(sockets.map((s) => s.closed));
  await eventually(async () => (await openSockets()) === 0);
}

describe("the WebSocket cap and keepalive (Node entry)", () => {
  it("serves HTTP to a worker holding more idle WebSockets than the inflight cap, and refuses the upgrade past the WebSocket cap", async () => {
    const sockets = await Promise.all(
      Array.from({ length: MAX_WEBSOCKETS }, (_, i) => openSocket(url(`/sock/idle-${i}`))),
    );
    expect(await openSockets()).toBe(MAX_WEBSOCKETS);

    const answers = await Promise.all(Array.from({ length: MAX_INFLIGHT }, (_, i) => fetch(url(`/sock/http-${i}`))));
    for (const res of answers) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ ok: true, open: MAX_WEBSOCKETS });
    }
    expect(await metricValue(pb, "pinboard_inflight")).toBe(0);

    const refused = await rejectedUpgrade(url("/sock/one-too-many"));
    expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual({
      status: 503,
      body: { error: "worker inflight cap exceeded, retry" },
    });
    expect(refused.headers["retry-after"]).toBe("1");
    expect(refused.headers["content-type"]).toBe("application/json");
    // The placement the refused upgrade made is released, so a retry places afresh.
    expect(await getRow(t, "/sock", "one-too-many")).toBeNull();

    // Both legs are pinged; healthy peers answer, so several intervals later every socket is still
    // open, and Pinboard's own pongs are never relayed to the other side.
    let pings = 0;
    let pongs = 0;
    sockets[1]!.ws.on("ping", () => pings++);
    sockets[1]!.ws.on("pong", () => pongs++);
    await pause(PING_MS * 3.5);
    expect(worker.open().filter((id) => id.startsWith("idle-"))).toHaveLength(MAX_WEBSOCKETS);
    expect(pings).toBeGreaterThanOrEqual(2);
    expect(worker.pings.get("idle-1")).toBeGreaterThanOrEqual(2);
    expect(pongs).toBe(0);
    sockets[0]!.ws.close(1000);
    await sockets[0]!.closed;
    await eventually(async () => (await openSockets()) === MAX_WEBSOCKETS - 1);
    const admitted = await openSocket(url("/sock/one-too-many"));
    await closeAll([...sockets.slice(1), admitted]);
  });

  it("cuts a client that completed the handshake and then never reads nor answers a ping, and gives its slot back", async () => {
    const healthy = await openSocket(url("/sock/alive-1"));
    const raw = await rawWebSocket(url("/sock/mute-1"));
    raw.socket.pause();
    await eventually(() => worker.open().includes("mute-1"));
    expect(await openSockets()).toBe(2);

    await eventually(() => closeOf("mute-1") !== undefined, PING_MS * 8);
    expect(closeOf("mute-1")).toEqual({ id: "mute-1", code: 1001, reason: "client went away" });
    await eventually(async () => (await openSockets()) === 1);
    expect(worker.open()).toEqual(["alive-1"]);
    raw.socket.destroy();
    await closeAll([healthy]);
  });

  it("cuts a worker socket that stops reading, closing the client with 1011, and gives its slot back", async () => {
    const started = Date.now();
    const socket = await openSocket(url("/sock/deaf-1"));
    expect(await socket.closed).toEqual({ code: 1011, reason: "worker connection lost" });
    // Found by the pings (two intervals), not by ws' 30 s close timeout.
    expect(Date.now() - started).toBeLessThan(PING_MS * 8);
    await eventually(async () => (await openSockets()) === 0);
  });
});
