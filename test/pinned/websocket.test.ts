import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { attestation, type LocalWorker, startLocalWorker, until } from "../support/local-worker.ts";

let w: LocalWorker;
beforeAll(async () => {
  w = await startLocalWorker();
});
afterAll(() => w.close());

interface Client {
  ws: WebSocket;
  messages: unknown[];
  closed: Promise<{ code: number; reason: string }>;
  next(): Promise<unknown>;
}

async function connect(path: string, options: { epoch?: string; token?: string | null } = {}): Promise<Client> {
  const epoch = options.epoch ?? "1";
  const headers: Record<string, string> = { "Pinboard-Epoch": epoch };
  const token = options.token === undefined ? await attestation({ htm: "GET", htu: path, epoch }) : options.token;
  if (token) headers["Pinboard-Attestation"] = token;
  const ws = new WebSocket(`${w.url.replace("http", "ws")}${path}`, { headers });
  const messages: unknown[] = [];
  const waiters: ((m: unknown) => void)[] = [];
  ws.on("message", (data) => {
    const value = JSON.parse(String(data));
    const waiter = waiters.shift();
    if (waiter) waiter(value);
    else messages.push(value);
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on("close", (code, reason) => resolve({ code, reason: reason.toString() })),
  );
  return {
    ws,
    messages,
    closed,
    next: () => (messages.length ? Promise.resolve(messages.shift()) : new Promise((resolve) => waiters.push(resolve))),
  };
}

function rejected(
  path: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${w.url.replace("http", "ws")}${path}`, { headers });
    ws.on("unexpected-response", (_req, res) => {
      resolve({ status: res.statusCode ?? 0, headers: res.headers });
      ws.terminate();
    });
    ws.on("open", () => reject(new Error("the upgrade was accepted")));
    ws.on("error", () => {});
  });
}

describe("ctx.acceptWebSocket on Node", () => {
  it("accepts an attested upgrade and exchanges messages through the instance", async () => {
    const alice = await connect("/room/r1?name=alice");
    expect(await alice.next()).toEqual({ hello: "alice", epoch: "1" });
    const bob = await connect("/room/r1?name=bob");
    expect(await bob.next()).toEqual({ hello: "bob", epoch: "1" });

    alice.ws.send("hi bob");
    expect(await alice.next()).toEqual({ from: "alice", text: "hi bob" });
    expect(await bob.next()).toEqual({ from: "alice", text: "hi bob" });

    const state = (await (await w.call("/room/r1", { epoch: "1" })).json()) as { messages: string[]; sockets: number };
    expect(state).toEqual({ messages: ["alice: hi bob"], sockets: 2 });

    alice.ws.close(1000, "bye");
    await alice.closed;
    // The instance drops alice's socket once the server side of the close is done: wait for that,
    // not for a fixed time. Bob's stays.
    const sockets = async () =>
      ((await (await w.call("/room/r1", { epoch: "1" })).json()) as { sockets: number }).sockets;
    await until(async () => (await sockets()) !== 2, 10_000);
    expect(await sockets()).toBe(1);
    expect(bob.ws.readyState).toBe(WebSocket.OPEN);
    bob.ws.close();
    await bob.closed;
  });

  it("closes an upgrade with an invalid attestation with 1008", async () => {
    for (const token of [
      null,
      await attestation({ aud: "someone-else", htm: "GET", htu: "/room/r2?name=eve", epoch: "1" }),
    ]) {
      const client = await connect("/room/r2?name=eve", { token });
      expect((await client.closed).code).toBe(1008);
      expect(client.messages).toEqual([]);
    }
  });

  it("rejects an upgrade at a stale epoch with 409", async () => {
    const client = await connect("/room/r3", { epoch: "5" });
    await client.next();
    expect(
      await rejected("/room/r3", {
        "Pinboard-Epoch": "4",
        "Pinboard-Attestation": await attestation({ htm: "GET", htu: "/room/r3", epoch: "4" }),
      }),
    ).toMatchObject({
      status: 409,
    });
    client.ws.close();
  });

  it("closes the sockets of an activation re-hydrated at a higher epoch with 1012", async () => {
    const old = await connect("/room/r4?name=old", { epoch: "7" });
    await old.next();
    const fresh = await connect("/room/r4?name=new", { epoch: "8" });
    expect(await fresh.next()).toEqual({ hello: "new", epoch: "8" });
    expect((await old.closed).code).toBe(1012);
    fresh.ws.close();
  });

  it("answers a refused upgrade with 503 and Pinned-Refusal: lease-unhealthy", async () => {
    const local = await startLocalWorker();
    try {
      await local.worker.drain();
      const token = await attestation({ htm: "GET", htu: "/room/x", epoch: "1" });
      const headers = { "Pinboard-Epoch": "1", "Pinboard-Attestation": token };
      const answer = await new Promise<{ status: number; refusal: unknown }>((resolve) => {
        const ws = new WebSocket(`${local.url.replace("http", "ws")}/room/x`, { headers });
        ws.on("unexpected-response", (_req, res) => {
          resolve({ status: res.statusCode ?? 0, refusal: res.headers["pinned-refusal"] });
          ws.terminate();
        });
        ws.on("error", () => {});
      });
      expect(answer).toEqual({ status: 503, refusal: "lease-unhealthy" });
    } finally {
      await local.close();
    }
  });

  it("fails with a clear error where no server can complete the handshake (app.fetch in-process)", async () => {
    const res = await w.worker.app.request("/room/r5", {
      headers: {
        upgrade: "websocket",
        "Pinboard-Epoch": "1",
        "Pinboard-Attestation": await attestation({ htm: "GET", htu: "/room/r5", epoch: "1" }),
      },
    });
    expect(res.status).toBe(500);
    expect(await res.json()).toEqual({ detail: "internal error" });
    expect(w.logger.lines.some((l) => l.includes("acceptWebSocket needs the server of worker.listen()"))).toBe(true);
  });
});
