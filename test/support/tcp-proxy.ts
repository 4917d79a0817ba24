import type { AddressInfo } from "node:net";
import { createConnection, createServer, type Socket } from "node:net";

/**
 * A TCP proxy on loopback in front of `targetPort`: each accepted client gets its own connection
 * to the target, and `relay` decides what crosses between the two. When either side closes, so
 * does the other; socket errors end the pair quietly. `close()` destroys every socket.
 */
export async function startTcpProxy(
  targetPort: number,
  relay: (client: Socket, upstream: Socket) => void,
): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection({ port: targetPort, host: "127.0.0.1" });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    relay(client, upstream);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
