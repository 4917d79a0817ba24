import { type AddressInfo, createConnection, createServer, type Server, type Socket } from "node:net";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type FaultProxy, startFaultProxy } from "../../../scripts/chaos/fault-proxy.ts";

/** The nemesis's TCP proxy over real loopback sockets, in front of an echo server. */

interface Echo {
  port: number;
  server: Server;
  /** Connections the echo server accepted. */
  accepted: number;
  sockets: Set<Socket>;
}

let echo: Echo;
let proxy: FaultProxy;
const clients: Socket[] = [];

beforeEach(async () => {
  const state = { accepted: 0 };
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    state.accepted++;
    sockets.add(socket);
    socket.on("error", () => {});
    socket.pipe(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  echo = {
    port: (server.address() as AddressInfo).port,
    server,
    sockets,
    get accepted() {
      return state.accepted;
    },
  };
  proxy = await startFaultProxy("echo", "127.0.0.1", echo.port);
});

afterEach(async () => {
  for (const client of clients.splice(0)) client.destroy();
  await proxy.close();
  for (const socket of echo.sockets) socket.destroy();
  await new Promise<void>((resolve) => echo.server.close(() => resolve()));
});

/** A client connected to the proxy, with everything it received and how it ended. */
async function connect(): Promise<{ socket: Socket; received: () => string; closed: Promise<Error | undefined> }> {
  const socket = createConnection({ port: proxy.port, host: "127.0.0.1" });
  clients.push(socket);
  let data = "";
  let error: Error | undefined;
  socket.on("data", (chunk: Buffer) => (data += chunk.toString()));
  socket.on("error", (err) => (error = err));
  const closed = new Promise<Error | undefined>((resolve) => socket.on("close", () => resolve(error)));
  await new Promise<void>((resolve, reject) => {
    socket.once("connect", resolve);
    socket.once("error", reject);
  });
  return { socket, received: () => data, closed };
}

/** Resolves once `received()` holds `expected`, or fails after timeoutMs. */
async function until(received: () => string, expected: string, timeoutMs = 2000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (received() !== expected) {
    if (Date.now() > deadline)
      throw new Error(`received ${JSON.stringify(received())}, not ${JSON.stringify(expected)}`);
    await sleep(5);
  }
}

/** The socket's error, or a timeout error when none came within 2 s. */
function errorOf(socket: Socket): Promise<Error> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(new Error("no error within 2 s")), 2000);
    socket.once("error", (err) => {
      clearTimeout(timer);
      resolve(err);
    });
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe("fault proxy", () => {
  it("passes bytes both ways and names itself", async () => {
    expect(proxy).toMatchObject({ name: "echo", targetHost: "127.0.0.1", targetPort: echo.port, mode: "pass" });
    const client = await connect();
    client.socket.write("ping");
    await until(client.received, "ping");
  });

  it("delays each chunk by delayMs each way, in order", async () => {
    proxy.setMode("delay", 150);
    expect(proxy.delayMs).toBe(150);
    const client = await connect();
    const sent = Date.now();
    client.socket.write("a");
    await sleep(20);
    // Lowering the delay while "a" is in flight must not let "b" overtake it.
    proxy.setMode("delay", 0);
    client.socket.write("b");
    await until(client.received, "ab");
    expect(Date.now() - sent).toBeGreaterThanOrEqual(150);
  });

  it("adds delayMs to a round trip in each direction", async () => {
    const client = await connect();
    proxy.setMode("delay", 100);
    const sent = Date.now();
    client.socket.write("x");
    await until(client.received, "x");
    expect(Date.now() - sent).toBeGreaterThanOrEqual(195);
  });

  it("partitions on drop: nothing crosses, nothing closes, and what was held arrives in order once it passes", async () => {
    const open = await connect();
    proxy.setMode("drop");
    open.socket.write("held ");
    open.socket.write("in order");
    const fresh = await connect();
    fresh.socket.write("held too");
    await sleep(300);
    expect([open.received(), fresh.received()]).toEqual(["", ""]);
    expect([open.socket.destroyed, fresh.socket.destroyed]).toEqual([false, false]);
    proxy.setMode("pass");
    await until(open.received, "held in order");
    await until(fresh.received, "held too");
  });

  it("counts the chunks a partition holds on their way to the target, until it passes", async () => {
    const open = await connect();
    open.socket.write("crosses");
    await until(open.received, "crosses");
    expect(proxy.heldTowardsTarget()).toBe(0);
    proxy.setMode("drop");
    open.socket.write("waits");
    const deadline = Date.now() + 2000;
    while (proxy.heldTowardsTarget() === 0 && Date.now() < deadline) await sleep(5);
    expect(proxy.heldTowardsTarget()).toBe(1);
    proxy.setMode("pass");
    expect(proxy.heldTowardsTarget()).toBe(0);
    await until(open.received, "crosseswaits");
  });

  it("blackholes: connections open now and new ones stay silent for good, even back in pass", async () => {
    const open = await connect();
    open.socket.write("before ");
    await until(open.received, "before ");
    proxy.setMode("blackhole");
    const client = await connect();
    client.socket.write("anyone?");
    open.socket.write("lost");
    await sleep(300);
    expect([client.received(), open.received()]).toEqual(["", "before "]);
    expect([client.socket.destroyed, open.socket.destroyed]).toEqual([false, false]);
    expect(echo.accepted).toBe(1);
    proxy.setMode("pass");
    open.socket.write("still lost");
    await sleep(300);
    expect([client.received(), open.received()]).toEqual(["", "before "]);
    const fresh = await connect();
    fresh.socket.write("new");
    await until(fresh.received, "new");
  });

  it("resets open connections and every new one", async () => {
    const open = await connect();
    proxy.setMode("reset");
    expect(await open.closed).toMatchObject({ code: "ECONNRESET" });
    const socket = createConnection({ port: proxy.port, host: "127.0.0.1" });
    clients.push(socket);
    expect(await errorOf(socket)).toMatchObject({ code: "ECONNRESET" });
  });

  it("lets a new connection through once back to pass", async () => {
    for (const mode of ["drop", "blackhole", "reset"] as const) {
      proxy.setMode(mode);
      proxy.setMode("pass");
      const client = await connect();
      client.socket.write(mode);
      await until(client.received, mode);
    }
  });

  it("carries a half-close: the client's FIN reaches the server, whose FIN comes back", async () => {
    const client = await connect();
    client.socket.end("bye");
    expect(await client.closed).toBeUndefined();
    expect(client.received()).toBe("bye");
  });

  it("resets the client when the target refuses", async () => {
    const refusing = await startFaultProxy("nowhere", "127.0.0.1", await closedPort());
    try {
      const socket = createConnection({ port: refusing.port, host: "127.0.0.1" });
      clients.push(socket);
      expect(await errorOf(socket)).toMatchObject({ code: "ECONNRESET" });
    } finally {
      await refusing.close();
    }
  });

  it("destroys every socket on close", async () => {
    const client = await connect();
    proxy.setMode("drop");
    await proxy.close();
    await client.closed;
    expect(client.socket.destroyed).toBe(true);
    proxy = await startFaultProxy("echo", "127.0.0.1", echo.port);
  });
});

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
