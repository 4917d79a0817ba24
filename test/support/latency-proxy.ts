import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export interface LatencyProxy {
  port: number;
  url: string;
  /** Added one-way delay for every chunk, in ms (both directions). */
  delayMs: number;
  close(): Promise<void>;
}

/** A TCP proxy on loopback that delays every chunk both ways: a slow Redis without touching Redis. */
export async function startLatencyProxy(targetPort: number, delayMs = 0): Promise<LatencyProxy> {
  const sockets = new Set<Socket>();
  const state = { delayMs };
  const pipe = (from: Socket, to: Socket) =>
    from.on("data", (chunk) => {
      const send = () => to.writable && to.write(chunk);
      if (state.delayMs > 0) setTimeout(send, state.delayMs);
      else send();
    });
  const server: Server = createServer((client) => {
    const upstream = createConnection({ port: targetPort, host: "127.0.0.1" });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    pipe(client, upstream);
    pipe(upstream, client);
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    get delayMs() {
      return state.delayMs;
    },
    set delayMs(ms: number) {
      state.delayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
