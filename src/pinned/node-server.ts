import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createAdaptorServer, type WebSocketServerLike } from "@hono/node-server";
import { WebSocketServer } from "ws";

export interface ListenOptions {
  /** 0 (the default) picks a free port. */
  port?: number | undefined;
  /** Default 127.0.0.1. */
  host?: string | undefined;
}

export interface Listening {
  /** http://host:port of the bound socket (a wildcard host reads as 127.0.0.1). */
  url: string;
  port: number;
  server: Server;
  /** Closes open WebSockets and connections, then the server. */
  close(): Promise<void>;
}

/**
 * Serves a fetch handler on Node with WebSocket upgrades enabled: a `ws` server in noServer
 * mode is handed to @hono/node-server, which routes each upgrade request through the app and
 * completes the handshake when the app accepts it (see websocket.ts).
 */
export function createPinnedServer(fetch: (request: Request, env: unknown) => Response | Promise<Response>): {
  server: Server;
  wss: WebSocketServer;
} {
  const wss = new WebSocketServer({ noServer: true });
  const server = createAdaptorServer({
    fetch,
    websocket: { server: wss as unknown as WebSocketServerLike },
  }) as Server;
  return { server, wss };
}

export async function listenPinned(
  fetch: (request: Request, env: unknown) => Response | Promise<Response>,
  options: ListenOptions = {},
): Promise<Listening> {
  const { server, wss } = createPinnedServer(fetch);
  const host = options.host ?? "127.0.0.1";
  const wanted = options.port ?? 0;
  if (!Number.isInteger(wanted) || wanted < 0 || wanted > 65535) {
    throw new RangeError(`listen: port must be an integer from 0 to 65535 (0 picks a free one), not ${String(wanted)}`);
  }
  await new Promise<void>((resolve, reject) => {
    const fail = (err: Error) => reject(listenError(err, wanted, host));
    server.once("error", fail);
    server.listen(wanted, host, () => {
      server.off("error", fail);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host.includes(":") ? `[${host}]` : host;
  let closed: Promise<void> | undefined;
  return {
    url: `http://${shown}:${port}`,
    port,
    server,
    close() {
      closed ??= new Promise<void>((resolve) => {
        for (const client of wss.clients) client.terminate();
        server.close(() => resolve());
        server.closeAllConnections();
      });
      return closed;
    },
  };
}

/**
 * A listen() failure in words that say what to do, with the system error's code. No `cause`: the
 * message holds all it says, and an unhandled rejection (`await worker.listen()` at the top of a
 * module) would print its stack after the line that matters.
 */
function listenError(err: Error, port: number, host: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  const message =
    code === "EADDRINUSE"
      ? `listen: port ${port} is in use (EADDRINUSE); pick another PORT or 0 for a free one`
      : code === "EACCES"
        ? `listen: no permission to listen on port ${port} (EACCES); use a port above 1023, or 0 for a free one`
        : code === "EADDRNOTAVAIL"
          ? `listen: ${host} is not an address of this machine (EADDRNOTAVAIL); ` +
            "use 127.0.0.1, 0.0.0.0 or one of its own addresses"
          : code === "ENOTFOUND" || code === "EAI_AGAIN"
            ? `listen: cannot resolve host ${JSON.stringify(host)} (${code})`
            : `listen on ${host}:${port} failed: ${err.message}`;
  return Object.assign(new Error(message), code ? { code } : {});
}
