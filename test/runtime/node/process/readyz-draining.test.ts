import { randomBytes } from "node:crypto";
import { connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Fleet, startFleet } from "../../../support/fleet.ts";
import { WsProbe } from "../../../support/ws-instances.ts";

/**
 * "GET /readyz: empty body. 200 when not draining and the node holds the fleet license and passes
 * cluster membership, else 503": the draining case, on the real Node entry, drained by a real
 * SIGTERM.
 *
 * On SIGTERM the node marks itself draining, then closes its proxied WebSockets (1001 to both
 * sides, waiting for the closing handshakes for a grace period) before it stops listening. A
 * client WebSocket that receives the 1001 and never answers it holds the node in that state for
 * the grace: the close frame's arrival says the node is already draining and still listening.
 */

let fleet: Fleet;

beforeAll(async () => {
  fleet = await startFleet({ workers: 1, namespaces: { "/wsd": WsProbe } });
  await fleet.skipColdStart();
});
afterAll(() => fleet?.close());

interface Frame {
  opcode: number;
  payload: Buffer;
}

/**
 * A WebSocket client on a raw TCP socket: it completes the opening handshake and then only
 * listens. It never answers a close frame, as a client that has stopped reading would not.
 */
function rawWebSocket(baseUrl: string, path: string): Promise<{ socket: Socket; nextFrame(): Promise<Frame> }> {
  const target = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(target.port), target.hostname);
    let buffer = Buffer.alloc(0);
    let handshaken = false;
    const frames: Frame[] = [];
    const waiters: Array<(f: Frame) => void> = [];
    const nextFrame = () =>
      frames.length ? Promise.resolve(frames.shift()!) : new Promise<Frame>((r) => waiters.push(r));
    socket.on("error", reject);
    socket.on("connect", () => {
      const key = randomBytes(16).toString("base64");
      socket.write(
        `GET ${path} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n` +
          `Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: ${key}\r\n\r\n`,
      );
    });
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      if (!handshaken) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = buffer.subarray(0, end).toString("latin1");
        buffer = buffer.subarray(end + 4);
        if (!head.startsWith("HTTP/1.1 101")) return reject(new Error(`the upgrade was answered: ${head}`));
        handshaken = true;
        resolve({ socket, nextFrame });
      }
      // Server frames are unmasked: 2 header bytes, an extended length when 126 or 127, the payload.
      for (;;) {
        if (buffer.length < 2) return;
        let length = buffer[1]! & 0x7f;
        let offset = 2;
        if (length === 126) {
          if (buffer.length < 4) return;
          length = buffer.readUInt16BE(2);
          offset = 4;
        } else if (length === 127) {
          if (buffer.length < 10) return;
          length = Number(buffer.readBigUInt64BE(2));
          offset = 10;
        }
        if (buffer.length < offset + length) return;
        const frame = { opcode: buffer[0]! & 0x0f, payload: Buffer.from(buffer.subarray(offset, offset + length)) };
        buffer = buffer.subarray(offset + length);
        const waiter = waiters.shift();
        if (waiter) waiter(frame);
        else frames.push(frame);
      }
    });
  });
}

describe("GET /readyz while the node drains", () => {
  it("is 200 with an empty body while serving, 503 with an empty body once SIGTERM has the node draining", async () => {
    const { pb } = fleet;
    const ready = await fetch(`${pb.url}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.text()).toBe("");

    const ws = await rawWebSocket(pb.url, "/wsd/held");
    const hello = await ws.nextFrame();
    expect(hello.opcode).toBe(0x1);
    expect(JSON.parse(hello.payload.toString("utf8"))).toMatchObject({
      hello: true,
      aud: fleet.workers[0]!.worker.sessionId,
    });

    const exited = new Promise<number | null>((resolve) => pb.process.once("exit", (code) => resolve(code)));
    pb.process.kill("SIGTERM");
    const close = await ws.nextFrame();
    expect(close.opcode).toBe(0x8);
    expect(close.payload.readUInt16BE(0)).toBe(1001);
    expect(close.payload.subarray(2).toString("utf8")).toBe("pinboard shutting down");

    // Draining, and still listening: the client has not answered the close.
    const draining = await fetch(`${pb.url}/readyz`);
    expect(draining.status).toBe(503);
    expect(await draining.text()).toBe("");
    const live = await fetch(`${pb.url}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ ok: true });

    expect(await exited).toBe(0);
    ws.socket.destroy();
  });
});
