import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { TurnCork } from "../../../../src/runtime/node/redis/turn-cork.ts";

/**
 * TurnCork on a real loopback connection: what one turn writes stays in Node's buffer (nothing
 * reaches the kernel) until the turn's check phase, then leaves as one write, in order.
 */

let server: Server | undefined;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function pair(): Promise<{ client: Socket; received: () => string }> {
  let text = "";
  server = createServer((peer) => {
    sockets.push(peer);
    peer.setEncoding("latin1");
    peer.on("data", (chunk: string) => (text += chunk));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as { port: number };
  const client = connect(port, "127.0.0.1");
  sockets.push(client);
  await once(client, "connect");
  return { client, received: () => text };
}

const nextCheckPhase = () => new Promise<void>((resolve) => setImmediate(resolve));

describe("TurnCork", () => {
  it("holds a turn's writes in Node's buffer and sends them together in its check phase", async () => {
    const { client, received } = await pair();
    const cork = new TurnCork();
    cork.hold(client);
    client.write("*1\r\n$4\r\nPING\r\n");
    cork.hold(client);
    client.write("*1\r\n$4\r\nTIME\r\n");
    // Corked once however many commands the turn sends; both still buffered in Node.
    expect(client.writableCorked).toBe(1);
    expect(client.writableLength).toBe(28);
    await nextCheckPhase();
    expect(client.writableCorked).toBe(0);
    expect(client.writableLength).toBe(0);
    await expect.poll(received).toBe("*1\r\n$4\r\nPING\r\n*1\r\n$4\r\nTIME\r\n");
  });

  it("corks again in the next turn, and never a socket that is gone", async () => {
    const { client, received } = await pair();
    const cork = new TurnCork();
    cork.hold(client);
    client.write("a");
    await nextCheckPhase();
    cork.hold(client);
    expect(client.writableCorked).toBe(1);
    client.write("b");
    await nextCheckPhase();
    await expect.poll(received).toBe("ab");

    cork.hold(undefined);
    client.destroy();
    cork.hold(client);
    expect(client.writableCorked).toBe(0);
  });
});
