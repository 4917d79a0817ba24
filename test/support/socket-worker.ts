import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type WebSocket from "ws";
import { WebSocketServer } from "ws";
import { HttpRegistration } from "./register-over-http.ts";

/**
 * A hand-written worker for the WebSocket limit tests: a node:http server with a `ws` server
 * behind it, registered through Pinboard's real registry like any worker. What it does with an
 * upgrade depends on the id it names (`/{ns}/{id}…`):
 *
 *   slow-*          answers the handshake after `?ms=` milliseconds
 *   deaf-*          accepts, then stops reading its socket (as a stopped process would): no pongs
 *   anything else   accepts
 *
 * On an accepted socket a binary message is echoed, and the text `send {n}` is answered with one
 * binary message of n bytes. What every socket received (`messages`, `pings`), how each closed
 * (`closes`, code and reason as the worker saw them) and the ids of the sockets still open are recorded. A
 * plain request is answered 200 `{"ok":true,"open":n}`.
 */
export interface SocketWorker {
  url: string;
  sessionId: string;
  readonly messages: Array<{ id: string; bytes: number }>;
  readonly closes: Array<{ id: string; code: number; reason: string }>;
  /** Ids of the upgrade requests that reached the worker, accepted yet or not. */
  readonly upgrades: string[];
  /** Pings received, per socket id. */
  readonly pings: Map<string, number>;
  /** Ids of the sockets open now. */
  open(): string[];
  close(): Promise<void>;
}

export async function startSocketWorker(pinboardUrl: string, token: string, namespace: string): Promise<SocketWorker> {
  const registration = new HttpRegistration("socket");
  const messages: SocketWorker["messages"] = [];
  const closes: SocketWorker["closes"] = [];
  const pings = new Map<string, number>();
  const upgrades: string[] = [];
  const sockets = new Map<WebSocket, string>();
  const wss = new WebSocketServer({ noServer: true });
  // leaky-*: the 101 carries headers no client may see through Pinboard.
  wss.on("headers", (headers: string[], req: IncomingMessage) => {
    if ((req.url ?? "").split("/")[2]?.startsWith("leaky-"))
      headers.push("Service-Worker-Allowed: /", "Pinboard-Epoch: 7", "Pinned-Refusal: lease-unhealthy", "X-Kept: yes");
  });

  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://worker");
    if (registration.answerHttp(url, req, res)) return;
    json(res, 200, { ok: true, open: sockets.size });
  });
  server.on("upgrade", (req: IncomingMessage, socket, head) => {
    const url = new URL(req.url ?? "/", "http://worker");
    const id = url.pathname.split("/")[2] ?? "";
    upgrades.push(id);
    const accept = () =>
      wss.handleUpgrade(req, socket, head, (ws) => {
        sockets.set(ws, id);
        ws.on("message", (data: Buffer, binary) => {
          messages.push({ id, bytes: data.length });
          const send = binary ? null : /^send (\d+)$/.exec(data.toString());
          if (binary) ws.send(data);
          else if (send) ws.send(Buffer.alloc(Number(send[1]), 1));
        });
        ws.on("close", (code, reason) => {
          sockets.delete(ws);
          closes.push({ id, code, reason: reason.toString() });
        });
        ws.on("ping", () => pings.set(id, (pings.get(id) ?? 0) + 1));
        ws.on("error", () => {});
        if (id.startsWith("deaf-")) ws.pause();
      });
    if (id.startsWith("slow-")) setTimeout(accept, Number(url.searchParams.get("ms") ?? 300));
    else accept();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const sessionId = await registration.register(pinboardUrl, token, namespace, url);

  return {
    url,
    sessionId,
    messages,
    closes,
    pings,
    upgrades,
    open: () => [...sockets.values()],
    close: () =>
      new Promise<void>((resolve) => {
        for (const ws of sockets.keys()) ws.terminate();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
