import { describe, expect, it } from "vitest";
import type { PinboardProcess } from "../support/pinboard-process.ts";
import { clientFrame, rawWebSocket } from "../support/raw-ws-client.ts";
import { metricValue } from "../support/scrape.ts";
import type { SocketWorker } from "../support/socket-worker.ts";
import { useSocketWorkerBehindPinboard } from "../support/socket-worker-fixture.ts";
import { eventually, openSocket } from "../support/ws-client.ts";

/**
 * PINBOARD_WS_MAX_MESSAGE_BYTES on both legs of a proxied WebSocket, through the real Node entry
 * at its default (1 MiB): a message is held whole before it is relayed, so the cap is what one
 * socket can make Pinboard hold. Past it, from either side, both sides are closed with 1009.
 */
const CAP = 1024 * 1024;
const OPCODE = { continuation: 0x0, binary: 0x2 };

let pb: PinboardProcess;
let worker: SocketWorker;

useSocketWorkerBehindPinboard({}, "/sock", (f) => ({ pb, worker } = f));

const url = (path: string) => `${pb.url}${path}`;
const closeOf = (id: string) => worker.closes.find((c) => c.id === id);
const receivedBy = (id: string) => worker.messages.filter((m) => m.id === id);

describe("the WebSocket message cap (Node entry)", () => {
  it("closes a client whose unfinished fragmented message passes the cap with 1009, and the worker with 1009, on the frame header", async () => {
    const ids = ["frag-1", "frag-2", "frag-3"];
    const clients = await Promise.all(ids.map((id) => rawWebSocket(url(`/sock/${id}`))));
    await eventually(() => ids.every((id) => worker.open().includes(id)));

    // Each: 768 KiB of a message (fin unset), then the header of a continuation declaring 90 MiB,
    // none of which is ever sent: the close can only come from the header, so Pinboard neither
    // waits for the 90 MiB nor holds them (the report's three 90 MiB messages took 284 MiB).
    for (const raw of clients) {
      raw.socket.write(clientFrame(OPCODE.binary, Buffer.alloc(768 * 1024, 1), { fin: false }));
      raw.socket.write(
        clientFrame(OPCODE.continuation, Buffer.alloc(0), { fin: false, declaredLength: 90 * 1024 * 1024 }),
      );
    }
    await eventually(() => clients.every((raw) => raw.closeCode() !== undefined));
    expect(clients.map((raw) => raw.closeCode())).toEqual([1009, 1009, 1009]);
    await Promise.all(clients.map((raw) => raw.ended));
    await eventually(() => ids.every((id) => closeOf(id) !== undefined));
    for (const id of ids) {
      expect(closeOf(id)).toEqual({ id, code: 1009, reason: "message too big" });
      expect(receivedBy(id)).toEqual([]);
    }
    await eventually(async () => (await metricValue(pb, "pinboard_websockets")) === 0);
  });

  it("relays a message of exactly the cap both ways, and closes both sides with 1009 one byte past it", async () => {
    const socket = await openSocket(url("/sock/edge-1"));
    const whole = Buffer.alloc(CAP, 7);
    socket.ws.send(whole);
    expect((await socket.next()).data.equals(whole)).toBe(true);
    socket.ws.send(`send ${CAP}`);
    expect((await socket.next()).data.length).toBe(CAP);

    socket.ws.send(Buffer.alloc(CAP + 1, 7));
    expect(await socket.closed).toEqual({ code: 1009, reason: "" });
    await eventually(() => closeOf("edge-1") !== undefined);
    expect(closeOf("edge-1")).toEqual({ id: "edge-1", code: 1009, reason: "message too big" });
    expect(receivedBy("edge-1").map((m) => m.bytes)).toEqual([CAP, `send ${CAP}`.length]);
  });

  it("closes the client with 1009 when the worker sends a message past the cap, and the worker too", async () => {
    const socket = await openSocket(url("/sock/big-1"));
    let frames = 0;
    socket.ws.on("message", () => frames++);
    socket.ws.send(`send ${8 * CAP}`);
    expect(await socket.closed).toEqual({ code: 1009, reason: "message too big" });
    expect(frames).toBe(0);
    await eventually(() => closeOf("big-1") !== undefined);
    expect(closeOf("big-1")).toMatchObject({ code: 1009 });
    await eventually(async () => (await metricValue(pb, "pinboard_websockets")) === 0);
  });
});
