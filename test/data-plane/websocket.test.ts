import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signAttestation, verifyAttestation } from "../../src/contract/attestation.ts";
import { type Fleet, type FleetWorker, startFleet } from "../support/fleet.ts";
import { rawRequest } from "../support/raw-http.ts";
import { getRow, putRow } from "../support/rows.ts";
import { Room } from "../support/sample-instances.ts";
import { eventually, openSocket, rejectedUpgrade, type TestSocket } from "../support/ws-client.ts";
import { WsProbe, type WsProbeHello } from "../support/ws-instances.ts";

/**
 * WebSocket upgrades through the real Node entry (a separate process) to real workers of the
 * worker library. Workers by namespace:
 *   /room, /probe  main          (the chat room and the probe)
 *   /move          mover, target (mover is drained with a row pointing at it)
 *   /full          two workers that refuse every activation (maxInstances 0)
 *   /lonely        one worker that refuses every activation
 *   /cap           one worker for the WebSocket cap (PINBOARD_MAX_WEBSOCKETS=4, PINBOARD_MAX_INFLIGHT=4)
 *   /gone          a worker whose server is closed under it
 */
let fleet: Fleet, main: FleetWorker, mover: FleetWorker, target: FleetWorker, gone: FleetWorker;

beforeAll(async () => {
  // A 60 s lease: workers heartbeat every 20 s, so the worker closed under Pinboard in the 502 test
  // is not re-probed (and marked degraded, hence skipped) before the upgrade reaches it.
  fleet = await startFleet({
    workers: 0,
    env: {
      PINBOARD_MAX_INFLIGHT: "4",
      PINBOARD_MAX_WEBSOCKETS: "4",
      PINBOARD_FORWARD_TIMEOUT_MS: "1500",
      PINBOARD_LEASE_TTL_MS: "60000",
    },
  });
  await fleet.skipColdStart();
  main = await fleet.addWorker({ namespaces: { "/room": Room, "/probe": WsProbe } });
  mover = await fleet.addWorker({ namespaces: { "/move": WsProbe } });
  target = await fleet.addWorker({ namespaces: { "/move": WsProbe } });
  await fleet.addWorker({ namespaces: { "/full": WsProbe }, maxInstances: 0 });
  await fleet.addWorker({ namespaces: { "/full": WsProbe }, maxInstances: 0 });
  await fleet.addWorker({ namespaces: { "/lonely": WsProbe }, maxInstances: 0 });
  await fleet.addWorker({ namespaces: { "/cap": WsProbe } });
  gone = await fleet.addWorker({ namespaces: { "/gone": WsProbe } });
});
afterAll(() => fleet.close());

const url = (path: string) => `${fleet.pb.url}${path}`;

async function health(): Promise<{ connections: number; resolutions: Record<string, number> }> {
  const res = await fetch(url("/registry/health"), {
    headers: { authorization: `Bearer ${await fleet.pb.operatorCredential()}` },
  });
  return (await res.json()) as { connections: number; resolutions: Record<string, number> };
}

async function close(socket: TestSocket, code?: number, reason?: string): Promise<{ code: number; reason: string }> {
  socket.ws.close(code, reason);
  return socket.closed;
}

const seenClose = (id: string) => WsProbe.closes.find((c) => c.id === id);

describe("WebSocket upgrades through the Node entry", () => {
  it("carries a chat room between two clients, both ways, and counts the open sockets", async () => {
    const alice = await openSocket(url("/room/lobby?name=alice"));
    expect(await alice.json()).toMatchObject({ hello: "alice" });
    const bob = await openSocket(url("/room/lobby?name=bob"));
    expect(await bob.json()).toMatchObject({ hello: "bob" });
    expect((await health()).connections).toBe(2);

    alice.ws.send("hi bob");
    expect(await alice.json()).toEqual({ from: "alice", text: "hi bob" });
    expect(await bob.json()).toEqual({ from: "alice", text: "hi bob" });
    bob.ws.send("hi alice");
    expect(await bob.json()).toEqual({ from: "bob", text: "hi alice" });
    expect(await alice.json()).toEqual({ from: "bob", text: "hi alice" });

    const state = (await (await fetch(url("/room/lobby"))).json()) as { messages: string[]; sockets: number };
    expect(state).toEqual({ messages: ["alice: hi bob", "bob: hi alice"], sockets: 2 });

    expect(await close(alice, 1000, "bye")).toEqual({ code: 1000, reason: "bye" });
    await eventually(
      async () => ((await (await fetch(url("/room/lobby"))).json()) as { sockets: number }).sockets === 1,
    );
    await close(bob);
    await eventually(async () => (await health()).connections === 0);
  });

  it("relays text and binary frames with their type, and pings end to end", async () => {
    const socket = await openSocket(url("/probe/frames"));
    await socket.json();
    const bytes = Buffer.from([0, 1, 2, 254, 255]);
    socket.ws.send(bytes);
    expect(await socket.next()).toEqual({ data: bytes, binary: true });
    socket.ws.send("héllo ✓");
    const text = await socket.next();
    expect(text.binary).toBe(false);
    expect(text.data.toString("utf8")).toBe("héllo ✓");
    // As large as PINBOARD_WS_MAX_MESSAGE_BYTES lets through by default (websocket-message-cap.test.ts).
    const big = Buffer.alloc(1024 * 1024, 7);
    socket.ws.send(big);
    expect((await socket.next()).data.equals(big)).toBe(true);

    const pong = new Promise<Buffer>((resolve) => socket.ws.once("pong", resolve));
    socket.ws.ping("are you there");
    expect((await pong).toString()).toBe("are you there");
    await close(socket);
  });

  it("propagates close codes and reasons both ways, 1008 included", async () => {
    const fromClient = await openSocket(url("/probe/close-1"));
    await fromClient.json();
    await close(fromClient, 4001, "client says bye");
    await eventually(() => seenClose("close-1") !== undefined);
    expect(seenClose("close-1")).toMatchObject({ code: 4001, reason: "client says bye" });

    const bare = await openSocket(url("/probe/close-2"));
    await bare.json();
    expect(await close(bare)).toEqual({ code: 1005, reason: "" });
    await eventually(() => seenClose("close-2") !== undefined);
    expect(seenClose("close-2")).toMatchObject({ code: 1005 });

    const fromWorker = await openSocket(url("/probe/close-3"));
    await fromWorker.json();
    fromWorker.ws.send("close 4002 worker says bye");
    expect(await fromWorker.closed).toEqual({ code: 4002, reason: "worker says bye" });

    const policy = await openSocket(url("/probe/close-4"));
    await policy.json();
    policy.ws.send("close 1008 policy violation");
    expect(await policy.closed).toEqual({ code: 1008, reason: "policy violation" });

    // A client that vanishes without a close frame (1006) reaches the worker as 1001.
    const dropped = await openSocket(url("/probe/close-5"));
    await dropped.json();
    dropped.ws.terminate();
    await eventually(() => seenClose("close-5") !== undefined);
    expect(seenClose("close-5")).toMatchObject({ code: 1001, reason: "client went away" });
  });

  it("hands the worker an attestation, the epoch, the subprotocols and no inbound Pinboard-* header", async () => {
    const socket = await openSocket(url("/probe/headers/some/rest?x=1"), {
      protocols: ["v2.chat", "v1.chat"],
      headers: {
        "pinboard-anything": "x",
        "pinboard-epoch": "999",
        pinboard_epoch: "999",
        "x-forwarded-for": "6.6.6.6",
        "x-forwarded-host": "evil.example",
        "x-real-ip": "6.6.6.6",
        forwarded: "for=6.6.6.6",
        x_forwarded_for: "6.6.6.6",
        "x-custom": "kept",
      },
    });
    const hello = await socket.json();
    const worker = main.worker;
    expect(socket.ws.protocol).toBe("v2.chat");
    expect(hello.path).toBe("/some/rest");
    expect(hello.query).toBe("?x=1");
    expect(hello.aud).toBe(worker.sessionId);
    const headers = hello.headers as Record<string, string>;
    expect(await verifyAttestation(headers["pinboard-attestation"]!, worker.secret, worker.sessionId!)).toMatchObject({
      aud: worker.sessionId,
    });
    expect(headers["pinboard-epoch"]).toMatch(/^\d+$/);
    expect(headers["pinboard-epoch"]).not.toBe("999");
    expect(headers["pinboard-epoch"]).toBe(hello.epoch);
    expect(headers["pinboard-anything"]).toBeUndefined();
    expect(
      Object.keys(headers)
        .filter((h) => h.startsWith("pinboard-"))
        .sort(),
    ).toEqual(["pinboard-attestation", "pinboard-epoch"]);
    expect(headers["x-forwarded-for"]).toBe("127.0.0.1");
    expect(headers["x-forwarded-host"]).toBe(new URL(fleet.pb.url).host);
    expect(headers["x-real-ip"]).toBeUndefined();
    expect(headers.forwarded).toBeUndefined();
    expect(Object.keys(headers).filter((name) => name.includes("_"))).toEqual([]);
    expect(headers["x-custom"]).toBe("kept");
    expect(headers["sec-websocket-protocol"]).toBe("v2.chat,v1.chat");
    expect(headers["sec-websocket-extensions"]).toBeUndefined();
    const row = await getRow(fleet.t, "/probe", "headers");
    expect(row).toMatchObject({ sessionId: worker.sessionId, epoch: hello.epoch });
    await close(socket);
  });

  it("never lets a client-provided attestation reach the worker", async () => {
    const worker = main.worker;
    const forged = await signAttestation("not-the-worker-secret", { aud: worker.sessionId! }, Date.now() / 1000);
    const socket = await openSocket(url("/probe/forged"), { headers: { "Pinboard-Attestation": forged } });
    const hello = await socket.json<WsProbeHello>();
    const seen = hello.headers["pinboard-attestation"] ?? "";
    expect(seen).not.toBe(forged);
    expect(await verifyAttestation(seen, worker.secret, worker.sessionId!)).not.toBeNull();
    expect(await verifyAttestation(forged, worker.secret, worker.sessionId!)).toBeNull();
    await close(socket);
  });

  it("answers upgrade misses with 404 not found, bad ids with 400 and caller failures with 403, before any placement", async () => {
    for (const path of ["/nowhere/x", "/healthz", "/readyz", "/registry/workers", "/registry", "/room"]) {
      const res = await rejectedUpgrade(url(path));
      expect({ path, status: res.status, body: JSON.parse(res.body) }).toEqual({
        path,
        status: 404,
        body: { error: "not found" },
      });
    }
    const bad = await rejectedUpgrade(url("/room/bad*id"));
    expect(bad.status).toBe(400);
    expect(bad.headers["content-type"]).toMatch(/^text\/plain/);

    const caller = await rejectedUpgrade(url("/probe/caller"), { headers: { "Pinboard-From": "/probe/other" } });
    expect({ status: caller.status, body: JSON.parse(caller.body) }).toEqual({
      status: 403,
      body: { error: "caller attestation requires session credentials" },
    });
    expect(caller.headers["content-type"]).toBe("application/json");

    const malformed = await rawRequest(url("/probe/malformed"), {
      headers: { connection: "Upgrade", upgrade: "websocket" },
    });
    expect(malformed.status).toBe(400);
    expect(await getRow(fleet.t, "/probe", "malformed")).toBeNull();
    // Plain HTTP on the same paths is untouched.
    expect((await fetch(url("/healthz"))).status).toBe(200);
  });

  it("relays a worker's non-101 answer with its status and filtered headers", async () => {
    const res = await rejectedUpgrade(url("/probe/teapot?status=418"));
    expect(res.status).toBe(418);
    expect(res.headers["x-probe"]).toBe("1");
    expect(res.headers["retry-after"]).toBe("7");
    expect(res.headers["pinboard-leak"]).toBeUndefined();
    expect(res.headers["x-accel-buffering"]).toBe("no");
  });

  it("re-places an upgrade refused by a draining worker on another worker", async () => {
    await putRow(fleet.t, "/move", "m1", { sessionId: mover.worker.sessionId!, epoch: "5" });
    await mover.worker.drain();
    const before = (await health()).resolutions.nack ?? 0;

    const socket = await openSocket(url("/move/m1"));
    const hello = await socket.json<WsProbeHello>();
    expect(hello.aud).toBe(target.worker.sessionId);
    expect(hello.headers["pinned-refusal"]).toBeUndefined();
    expect(await getRow(fleet.t, "/move", "m1")).toMatchObject({
      sessionId: target.worker.sessionId,
      epoch: hello.epoch,
    });
    expect((await health()).resolutions.nack).toBe(before + 1);
    socket.ws.send("still here");
    expect((await socket.next()).data.toString()).toBe("still here");
    await close(socket);
  });

  it("answers 503 worker refused activation, retry when the re-placement refuses too or no worker is left", async () => {
    const before = (await health()).resolutions.nack ?? 0;
    for (const path of ["/full/f1", "/lonely/l1"]) {
      const res = await rejectedUpgrade(url(path));
      expect({ path, status: res.status, body: JSON.parse(res.body) }).toEqual({
        path,
        status: 503,
        body: { error: "worker refused activation, retry" },
      });
      expect(res.headers["retry-after"]).toBe("1");
      expect(res.headers["pinned-refusal"]).toBeUndefined();
    }
    expect(await getRow(fleet.t, "/full", "f1")).toBeNull();
    expect(await getRow(fleet.t, "/lonely", "l1")).toBeNull();
    // /full: both workers refused (two nacks); /lonely: one refusal, then no candidate left.
    expect((await health()).resolutions.nack).toBe(before + 3);
  });

  it("holds a WebSocket slot per open socket, apart from the inflight cap of HTTP requests", async () => {
    const sockets = await Promise.all(["c1", "c2", "c3", "c4"].map((id) => openSocket(url(`/cap/${id}`))));
    const refused = await rejectedUpgrade(url("/cap/c5"));
    expect(refused.status).toBe(503);
    expect(JSON.parse(refused.body)).toEqual({ error: "worker inflight cap exceeded, retry" });
    expect(refused.headers["retry-after"]).toBe("1");
    const http = await fetch(url("/cap/c5"));
    expect(http.status).toBe(200);
    expect(await http.json()).toEqual({ sockets: 0 });

    await close(sockets[0]!);
    let admitted: TestSocket | undefined;
    await eventually(async () => (admitted = await openSocket(url("/cap/c5")).catch(() => undefined)) !== undefined);
    await Promise.all([...sockets.slice(1), admitted!].map((s) => close(s)));
  });

  it("answers 504 upstream timeout when the worker does not answer the handshake in time", async () => {
    const res = await rejectedUpgrade(url("/probe/slow?sleep=2500"));
    expect(res.status).toBe(504);
    expect(res.body).toBe("upstream timeout");
  });

  it("closes the client with 1011 when the worker's connection drops, then answers 502 for the unreachable worker", async () => {
    const socket = await openSocket(url("/gone/g0"));
    await socket.json();
    await gone.listening.close();
    expect(await socket.closed).toEqual({ code: 1011, reason: "worker connection lost" });

    const res = await rejectedUpgrade(url("/gone/g1"));
    expect({ status: res.status, body: res.body }).toEqual({ status: 502, body: "bad gateway" });
    expect(await getRow(fleet.t, "/gone", "g1")).toBeNull();
    await eventually(async () => (await health()).connections === 0);
  });

  it("closes proxied sockets with 1001 on both sides when Pinboard stops", async () => {
    const socket = await openSocket(url("/probe/shutdown"));
    await socket.json();
    await fleet.pb.stop();
    expect((await socket.closed).code).toBe(1001);
    await eventually(() => seenClose("shutdown") !== undefined);
    expect(seenClose("shutdown")).toMatchObject({ code: 1001, reason: "pinboard shutting down" });
  });
});
