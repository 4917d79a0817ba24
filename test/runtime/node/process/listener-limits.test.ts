import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../../../src/runtime/node/process/free-port.ts";
import { Echo } from "../../../support/echo-instance.ts";
import { type Fleet, startFleet } from "../../../support/fleet.ts";
import { type PinboardProcess, startPinboardProcess } from "../../../support/pinboard-process.ts";
import { closedUnanswered, converse, dribble, parseAnswer } from "../../../support/slow-client.ts";
import { openSocket } from "../../../support/ws-client.ts";
import { WsProbe } from "../../../support/ws-instances.ts";

/**
 * node:http's limits on every listener of the real Node entry (data port and admin port), over
 * raw sockets: PINBOARD_HEADERS_TIMEOUT_MS cuts a client that dribbles its headers,
 * PINBOARD_REQUEST_TIMEOUT_MS one that dribbles its body, and neither touches an idle keep-alive
 * connection, a slow answer or an open WebSocket; PINBOARD_MAX_CONNECTIONS closes connections past
 * the cap as they are accepted.
 */

const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000;
/** node:http looks for late connections every quarter of the shorter timeout (src/runtime/node/process/listeners.ts). */
const CHECK_MS = 250;
const NODE_408 = "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n";
const HEALTHZ = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";

let fleet: Fleet;
let ports: { data: number; admin: number };

beforeAll(async () => {
  const admin = await freePort();
  fleet = await startFleet({
    namespaces: { "/echo": Echo, "/probe": WsProbe },
    env: {
      PINBOARD_ADMIN_PORT: String(admin),
      PINBOARD_HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      PINBOARD_REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    },
  });
  await fleet.skipColdStart();
  ports = { data: fleet.pb.port, admin };
});
afterAll(() => fleet?.close());

describe("the headers timeout", () => {
  it("answers 408 and closes a connection whose headers never end, on the data port and the admin port", async () => {
    const start = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n";
    const [data, admin] = await Promise.all([
      dribble(ports.data, start, "X-Slow: 1\r\n", 200),
      dribble(ports.admin, start, "X-Slow: 1\r\n", 200),
    ]);
    // The data port answers parser refusals as the data plane does (src/runtime/node/transport/client-error.ts).
    expect(parseAnswer(data.received)).toEqual({ status: 408, body: '{"error":"request timeout"}' });
    expect(admin.received).toBe(NODE_408);
    for (const { elapsedMs } of [data, admin]) {
      expect(elapsedMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50);
      expect(elapsedMs).toBeLessThan(HEADERS_TIMEOUT_MS + CHECK_MS + 500);
    }
  });

  it("leaves an idle keep-alive connection alone: it runs only while headers arrive", async () => {
    const client = await converse(ports.data);
    expect(parseAnswer(await client.send(HEALTHZ))).toEqual({ status: 200, body: '{"ok":true}' });
    await new Promise((r) => setTimeout(r, HEADERS_TIMEOUT_MS + 2 * CHECK_MS + 300));
    expect(parseAnswer(await client.send(HEALTHZ))).toEqual({ status: 200, body: '{"ok":true}' });
    client.socket.destroy();
  });
});

describe("the request timeout", () => {
  it("answers 408 and closes a connection whose body never ends", async () => {
    const token = await fleet.pb.workerCredential();
    const head = `POST /registry/register HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`;
    const cut = await dribble(ports.admin, head, " ", 200);
    expect(cut.received).toBe(NODE_408);
    expect(cut.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(cut.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + CHECK_MS + 500);
  });

  it("answers 408 and closes a forward whose client never finishes its body, on the data port", async () => {
    const head = `POST /echo/dribble/x HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1000\r\n\r\n`;
    const cut = await dribble(ports.data, head, " ", 200);
    expect(parseAnswer(cut.received)).toEqual({ status: 408, body: '{"error":"request timeout"}' });
    expect(cut.elapsedMs).toBeGreaterThanOrEqual(REQUEST_TIMEOUT_MS - 50);
    expect(cut.elapsedMs).toBeLessThan(REQUEST_TIMEOUT_MS + CHECK_MS + 500);
  });

  it("never cuts an answer that takes longer: the request itself was whole", async () => {
    const res = await fetch(`${fleet.pb.url}/echo/slow/x?sleep=${REQUEST_TIMEOUT_MS + CHECK_MS + 500}`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ method: "GET", path: "/x" });
  });

  it("never cuts an open WebSocket", async () => {
    const socket = await openSocket(`${fleet.pb.url}/probe/ws1`);
    expect(await socket.json()).toMatchObject({ hello: true });
    await new Promise((r) => setTimeout(r, REQUEST_TIMEOUT_MS + 2 * CHECK_MS + 500));
    socket.ws.send("still here");
    const echoed = await socket.next();
    expect(echoed.data.toString()).toBe("still here");
    socket.ws.close(1000);
    expect(await socket.closed).toEqual({ code: 1000, reason: "" });
  });
});

describe("the connection cap", () => {
  let pb: PinboardProcess;
  let capped: { data: number; admin: number };

  beforeAll(async () => {
    const admin = await freePort();
    pb = await startPinboardProcess({
      redis: fleet.t,
      env: { PINBOARD_PREFIX: "capped:", PINBOARD_ADMIN_PORT: String(admin), PINBOARD_MAX_CONNECTIONS: "2" },
    });
    capped = { data: pb.port, admin };
  });
  afterAll(() => pb?.stop());

  for (const which of ["data", "admin"] as const) {
    it(`closes connections past PINBOARD_MAX_CONNECTIONS on the ${which} port, and accepts again once one goes`, async () => {
      const port = capped[which];
      const held = [await converse(port), await converse(port)];
      for (const client of held)
        expect(parseAnswer(await client.send(HEALTHZ))).toEqual({ status: 200, body: '{"ok":true}' });
      expect(await closedUnanswered(port)).toBe(true);
      // The connections within the cap keep working.
      expect(parseAnswer(await held[0]!.send(HEALTHZ))).toEqual({ status: 200, body: '{"ok":true}' });

      held[1]!.socket.destroy();
      let next = await converse(port);
      for (
        let tries = 0;
        tries < 40 &&
        (await Promise.race([next.closed.then(() => true), new Promise((r) => setTimeout(() => r(false), 50))]));
        tries++
      ) {
        next = await converse(port); // the server had not yet counted the closed one out
      }
      expect(parseAnswer(await next.send(HEALTHZ))).toEqual({ status: 200, body: '{"ok":true}' });
      next.socket.destroy();
      held[0]!.socket.destroy();
      await new Promise((r) => setTimeout(r, 100));
    });
  }
});
