import { randomBytes } from "node:crypto";
import { type AddressInfo, connect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";
import { KeepAlive } from "../../../../src/runtime/node/transport/ws-keepalive.ts";

/**
 * The keep-alive's judgement of a peer whose pong cannot come back in time, over loopback: the
 * server keeps two messages queued (one being written, the next behind it, each completion
 * queueing one more), each a little smaller than the last, so the queue shrinks every time a
 * message is written out whole, and its ping waits behind megabytes. A peer that reads slowly but
 * steadily (a message or more an interval) stays connected for many intervals; one that stopped
 * reading is cut within a few. Both are raw TCP clients that never answer a ping: the slow one is
 * kept for its progress alone.
 *
 * The queue is shrinking only because the messages are: ws-keepalive.ts counts progress as a
 * smaller queue than at the last tick, which a queue topped up to the same level (the pipe's
 * HIGH_WATER) does not show. NOTES-survivors.md has more.
 */

const INTERVAL_MS = 250;
/** The first message; each next one STEP_BYTES smaller. Behind the first two the ping waits. */
const FIRST_BYTES = 1024 * 1024;
const STEP_BYTES = 4 * 1024;
/**
 * The slow reader's pace: 256 KiB every 16 ms (at most 16 MiB/s, a few messages an interval),
 * far below what loopback carries.
 */
const READ_BYTES = 256 * 1024;
const READ_EVERY_MS = 16;

let wss: WebSocketServer;
let keepAlive: KeepAlive;
let port: number;
/** The server side of each connection, by the client's port, and when it closed. */
const accepted = new Map<number, { ws: WebSocket; closedAt?: number }>();
beforeAll(async () => {
  keepAlive = new KeepAlive(INTERVAL_MS);
  wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  wss.on("connection", (ws, req) => {
    const side: { ws: WebSocket; closedAt?: number } = { ws };
    accepted.set(req.socket.remotePort!, side);
    ws.once("close", () => (side.closedAt = performance.now()));
    keepAlive.watch(ws);
    const payload = Buffer.alloc(FIRST_BYTES);
    let size = FIRST_BYTES;
    const sendNext = () => {
      if (ws.readyState !== ws.OPEN || size <= STEP_BYTES) return;
      ws.send(payload.subarray(0, size), sendNext);
      size -= STEP_BYTES;
    };
    sendNext();
    sendNext();
  });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  port = (wss.address() as AddressInfo).port;
});
afterAll(async () => {
  keepAlive.stop();
  for (const ws of wss.clients) ws.terminate();
  await new Promise<void>((resolve) => wss.close(() => resolve()));
});

interface Peer {
  socket: Socket;
  /** The client's port, which names its connection on the server. */
  port: number;
  received: number;
}

/** When the server's side of the peer's connection closed (the keep-alive terminated it), if it did. */
const cutAt = (peer: Peer) => accepted.get(peer.port)?.closedAt;

/** A raw client through the handshake, reading nothing until told to. */
function rawPeer(): Promise<Peer> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const peer: Peer = { socket, port: 0, received: 0 };
    socket.on("error", () => {});
    socket.on("connect", () => {
      peer.port = socket.localPort!;
      const key = randomBytes(16).toString("base64");
      socket.write(
        `GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
      );
    });
    socket.once("readable", () => {
      const head = socket.read(12) as Buffer | null;
      if (head?.toString("latin1") !== "HTTP/1.1 101") reject(new Error(`no 101: ${head}`));
      else resolve(peer);
    });
  });
}

/** Reads READ_BYTES every READ_EVERY_MS (at full speed, then paused until the next turn), until stopped. */
function readSlowly(peer: Peer): () => void {
  let budget = 0;
  peer.socket.on("data", (chunk: Buffer) => {
    peer.received += chunk.length;
    budget -= chunk.length;
    if (budget <= 0) peer.socket.pause();
  });
  peer.socket.pause();
  const timer = setInterval(() => {
    budget = READ_BYTES;
    peer.socket.resume();
  }, READ_EVERY_MS);
  return () => clearInterval(timer);
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("the WebSocket keep-alive behind a large send queue", () => {
  it("keeps a slow reader that makes progress past many intervals, and cuts one that stopped reading", async () => {
    const slow = await rawPeer();
    const dead = await rawPeer();
    const stopReading = readSlowly(slow);
    const start = performance.now();
    try {
      await pause(INTERVAL_MS * 8);
      const readBytes = slow.received;
      expect({ slowCut: cutAt(slow) !== undefined, deadCut: cutAt(dead) !== undefined }).toEqual({
        slowCut: false,
        deadCut: true,
      });
      // Cut by the keep-alive within a few intervals, not by anything slower.
      expect(cutAt(dead)! - start).toBeLessThan(INTERVAL_MS * 5);
      // The slow peer was reading all along: several messages in the time.
      expect(readBytes).toBeGreaterThan(4 * FIRST_BYTES);
    } finally {
      stopReading();
      slow.socket.destroy();
      dead.socket.destroy();
    }
  });
});
