import type { AddressInfo } from "node:net";
import { createConnection, createServer, type Socket } from "node:net";

export interface HangProxy {
  url: string;
  /** While true, every connection is accepted and every byte a client sends is swallowed: no answer ever comes. */
  hanging: boolean;
  close(): Promise<void>;
}

/**
 * A TCP proxy on loopback in front of an HTTP server (the REST bridge) that can be switched to
 * hang: connections, new or kept alive, stay open and are never answered, as an endpoint whose
 * network went silent would be.
 */
export async function startHangProxy(targetPort: number): Promise<HangProxy> {
  const sockets = new Set<Socket>();
  const state = { hanging: false };
  const server = createServer((client) => {
    const upstream = createConnection({ port: targetPort, host: "127.0.0.1" });
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {});
    }
    client.on("data", (chunk: Buffer) => {
      if (!state.hanging) upstream.write(chunk);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!state.hanging) client.write(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get hanging() {
      return state.hanging;
    },
    set hanging(on: boolean) {
      state.hanging = on;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
