import type { AddressInfo } from "node:net";
import WebSocket, { WebSocketServer } from "ws";

export interface LocalPeer {
  url: string;
  /** The server-side socket of the first connection. */
  accepted: Promise<WebSocket>;
  close(): Promise<void>;
}

/** A bare `ws` server on a free loopback port (for in-process tests of the socket pipe). */
export async function localPeer(onConnection: (ws: WebSocket) => void = () => {}): Promise<LocalPeer> {
  const wss = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  await new Promise<void>((resolve) => wss.once("listening", () => resolve()));
  const accepted = new Promise<WebSocket>((resolve) =>
    wss.once("connection", (ws) => {
      onConnection(ws);
      resolve(ws);
    }),
  );
  return {
    url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`,
    accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of wss.clients) ws.terminate();
        wss.close(() => resolve());
      }),
  };
}

/** A `ws` client, resolved once open; `paused` stops reading at once (as the proxy's upstream does). */
export function connectTo(url: string, options: { paused?: boolean } = {}): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url);
    ws.once("open", () => {
      if (options.paused) ws.pause();
      resolve(ws);
    });
    ws.once("error", reject);
  });
}
