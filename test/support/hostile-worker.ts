import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { HttpRegistration } from "./register-over-http.ts";

/**
 * A worker that misbehaves on purpose, for the tests that every forward settles. It answers the
 * registration probe like any worker and registers itself through the real registry; every
 * forwarded request is answered according to the id it names (`/{ns}/{id}…`):
 *
 *   switch-*        101 Switching Protocols to whatever was asked, then keeps the socket open
 *   cut-length-*    200 with Content-Length: 100000, sends 10 bytes, closes the connection
 *   cut-chunked-*   200 chunked, sends one chunk, closes the connection
 *   hang-*          never answers
 *   slow-*          answers after `?ms=` (default 300) milliseconds
 *   drip-*          200 chunked, a chunk every 50 ms for 5 s
 *   fail-*          502 text "failing", once the body has arrived
 *   anything else   200 JSON: the method and headers it received, and the body's size
 *
 * Every request it saw is listed in `seen` (with `bodyBytes` once its body has ended, in the modes
 * that read it), and `open` counts the connections still open.
 */
export interface HostileWorker {
  url: string;
  readonly seen: Array<{ method: string; url: string; headers: IncomingMessage["headers"]; bodyBytes?: number }>;
  open(): number;
  register(pinboardUrl: string, token: string, namespace: string): Promise<string>;
  close(): Promise<void>;
}

export async function startHostileWorker(): Promise<HostileWorker> {
  const registration = new HttpRegistration("hostile");
  const seen: HostileWorker["seen"] = [];
  let connections = 0;
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://worker");
    if (registration.answerHttp(url, req, res)) return;
    const entry: HostileWorker["seen"][number] = { method: req.method ?? "", url: req.url ?? "", headers: req.headers };
    seen.push(entry);
    misbehave(url, req, res, entry);
  });
  server.on("connection", (socket) => {
    connections++;
    socket.once("close", () => connections--);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    url,
    seen,
    open: () => connections,
    register: (pinboardUrl, token, namespace) => registration.register(pinboardUrl, token, namespace, url),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

function misbehave(url: URL, req: IncomingMessage, res: ServerResponse, seen: { bodyBytes?: number }): void {
  const id = url.pathname.split("/")[2] ?? "";
  const socket = req.socket;
  if (id.startsWith("switch-")) {
    socket.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n");
    return;
  }
  if (id.startsWith("cut-length-")) {
    socket.write("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\n0123456789");
    setTimeout(() => socket.destroy(), 20);
    return;
  }
  if (id.startsWith("cut-chunked-")) {
    socket.write(
      "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\n\r\na\r\n0123456789\r\n",
    );
    setTimeout(() => socket.destroy(), 20);
    return;
  }
  if (id.startsWith("hang-")) return;
  if (id.startsWith("slow-")) {
    const timer = setTimeout(() => json(res, 200, { slow: true }), Number(url.searchParams.get("ms") ?? 300));
    res.once("close", () => clearTimeout(timer));
    return;
  }
  if (id.startsWith("drip-")) {
    res.writeHead(200, { "content-type": "text/plain" });
    let n = 0;
    const timer = setInterval(() => {
      if (++n <= 100) {
        res.write(`chunk ${n}\n`);
        return;
      }
      clearInterval(timer);
      res.end();
    }, 50);
    res.once("close", () => clearInterval(timer));
    return;
  }
  let bytes = 0;
  req.on("data", (chunk: Buffer) => (bytes += chunk.length));
  req.once("end", () => (seen.bodyBytes = bytes));
  if (id.startsWith("fail-"))
    req.once("end", () => res.writeHead(502, { "content-type": "text/plain" }).end("failing"));
  else req.once("end", () => json(res, 200, { method: req.method, headers: req.headers, bodyBytes: bytes }));
}

function json(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
}
