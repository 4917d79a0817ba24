import { describe, expect, it } from "vitest";
import { HIGH_WATER, pipeSockets } from "../../../../src/runtime/node/transport/ws-pipe.ts";
import { eventually } from "../../../support/ws-client.ts";
import { connectTo, localPeer } from "../../../support/ws-peers.ts";

/**
 * The Node entry's socket pipe between a client's WebSocket and a worker's, in process over
 * loopback: back-pressure from a slow client reaches the worker's socket. The upgrades through
 * the whole Node entry are test/data-plane/websocket.test.ts.
 */

describe("the socket pipe (in process)", () => {
  it("stops reading the worker while the client is backed up, and resumes once it drains", async () => {
    const MESSAGES = 48;
    const payload = Buffer.alloc(1024 * 1024, 1);
    const worker = await localPeer((ws) => {
      for (let i = 0; i < MESSAGES; i++) ws.send(payload);
    });
    const front = await localPeer();
    const reader = await connectTo(front.url);
    reader.pause();
    let received = 0;
    reader.on("message", () => received++);
    const client = await front.accepted;
    const upstream = await connectTo(worker.url, { paused: true });
    const pipe = pipeSockets(client, upstream, () => {});
    try {
      await eventually(() => upstream.isPaused);
      await new Promise((r) => setTimeout(r, 200));
      expect(upstream.isPaused).toBe(true);
      // Pinboard holds about one high-water mark of the flood, not the flood.
      expect(client.bufferedAmount).toBeLessThan(HIGH_WATER + 2 * payload.length);
      expect(received).toBeLessThan(MESSAGES);

      reader.resume();
      await eventually(() => received === MESSAGES, 20_000);
      expect(upstream.isPaused).toBe(false);
      reader.close(4005, "done");
      await pipe.done;
      expect(upstream.readyState).toBe(upstream.CLOSED);
    } finally {
      reader.terminate();
      await worker.close();
      await front.close();
    }
  });
});
