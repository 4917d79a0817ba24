import type { AddressInfo } from "node:net";
import { createServer, type Server, type Socket } from "node:net";
import { type ParsedRequest, parseRequest } from "./http-wire.ts";
import { HttpRegistration } from "./register-over-http.ts";

/**
 * A worker that reads the raw bytes Pinboard sends it with its own strict HTTP/1.1 parser (not
 * node:http's), for the differential framing suite: every request it parses on every connection
 * is listed in `seen` with its exact body bytes, and anything it cannot parse unambiguously (a
 * body without framing, Content-Length beside Transfer-Encoding, a bad chunk) is listed in
 * `anomalies` and ends that connection. It answers the registration probe like any worker.
 *
 * Forwarded requests are answered by the id they name (`/{ns}/{id}`), written byte for byte on a
 * connection kept alive, so that whatever a bad answer leaves on the wire meets the next forward:
 *
 *   body204-*      204 with Content-Length: 5 and five bytes after it
 *   body304-*      304 with Content-Length: 5 and five bytes after it
 *   headbody-*     to HEAD: 200 with Content-Length: 5 and five bytes after it
 *   clte-*         200 with both Content-Length and Transfer-Encoding: chunked
 *   dupcl-*        200 with two different Content-Length values
 *   unframed-*     200 without framing, the body delimited by closing the connection
 *   hints-*        103 Early Hints, then 200 "ok"
 *   odd600-*       status 600 with a body
 *   connlength-*   200 whose Connection header names Content-Length
 *   swallowed-*    200 with Service-Worker-Allowed: /, Pinboard-Epoch and Pinned-Refusal
 *   anything else  200 JSON {"seen": n, "method", "bytes"}: the request's place in `seen`
 */
export interface SeenRequest extends ParsedRequest {
  /** The worker's own number for the connection the request came on. */
  connection: number;
}

export interface FramingWorker {
  url: string;
  readonly seen: SeenRequest[];
  readonly anomalies: string[];
  register(pinboardUrl: string, token: string, namespace: string): Promise<string>;
  close(): Promise<void>;
}

const HEAD_ANSWER = (status: string, lines: string[]): string =>
  `HTTP/1.1 ${status}\r\n${lines.map((l) => `${l}\r\n`).join("")}\r\n`;

const SCRIPTED: Record<string, string> = {
  body204: `${HEAD_ANSWER("204 No Content", ["Content-Length: 5"])}stray`,
  body304: `${HEAD_ANSWER("304 Not Modified", ["Content-Length: 5"])}stray`,
  headbody: `${HEAD_ANSWER("200 OK", ["Content-Length: 5"])}stray`,
  clte: `${HEAD_ANSWER("200 OK", ["Content-Length: 3", "Transfer-Encoding: chunked"])}5\r\nhello\r\n0\r\n\r\n`,
  dupcl: `${HEAD_ANSWER("200 OK", ["Content-Length: 5", "Content-Length: 6"])}hello!`,
  hints: `${HEAD_ANSWER("103 Early Hints", ["Link: </a.css>; rel=preload"])}${HEAD_ANSWER("200 OK", ["Content-Length: 2"])}ok`,
  odd600: `${HEAD_ANSWER("600 Odd", ["Content-Length: 2"])}ok`,
  connlength: `${HEAD_ANSWER("200 OK", ["Connection: content-length", "Content-Length: 5"])}hello`,
  swallowed: `${HEAD_ANSWER("200 OK", ["Service-Worker-Allowed: /", "Pinboard-Epoch: 1", "Pinned-Refusal: lease-unhealthy", "Content-Length: 2"])}ok`,
};

export async function startFramingWorker(): Promise<FramingWorker> {
  const registration = new HttpRegistration("framing");
  const seen: SeenRequest[] = [];
  const anomalies: string[] = [];
  const sockets = new Set<Socket>();
  let connections = 0;

  const answer = (socket: Socket, request: ParsedRequest, connection: number): void => {
    const url = new URL(request.target, "http://worker");
    if (url.pathname === "/_pinned/challenge") {
      const value = registration.answer(
        request.headers.find(([n]) => n.toLowerCase() === "pinboard-proxy-secret")?.[1],
        url.searchParams.get("challenge"),
      );
      const body = value === undefined ? '{"detail":"unknown challenge"}' : JSON.stringify({ value });
      socket.write(
        `${HEAD_ANSWER(value === undefined ? "404 Not Found" : "200 OK", ["Content-Type: application/json", `Content-Length: ${body.length}`])}${body}`,
      );
      return;
    }
    seen.push({ ...request, connection });
    const scenario = (url.pathname.split("/")[2] ?? "").split("-")[0]!;
    if (scenario === "unframed") {
      socket.end(`${HEAD_ANSWER("200 OK", ["Connection: close"])}hello`);
      return;
    }
    const scripted = SCRIPTED[scenario];
    if (scripted !== undefined && (scenario !== "headbody" || request.method === "HEAD")) {
      socket.write(scripted);
      return;
    }
    const body = JSON.stringify({ seen: seen.length - 1, method: request.method, bytes: request.body.length });
    const head = HEAD_ANSWER("200 OK", ["Content-Type: application/json", `Content-Length: ${body.length}`]);
    socket.write(request.method === "HEAD" ? head : head + body);
  };

  const server: Server = createServer((socket) => {
    const connection = ++connections;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => {});
    let buffered = Buffer.alloc(0);
    socket.on("data", (data: Buffer) => {
      buffered = Buffer.concat([buffered, data]);
      for (;;) {
        const parsed = parseRequest(buffered);
        if (parsed.kind === "incomplete") return;
        if (parsed.kind === "invalid") {
          anomalies.push(
            `connection ${connection}: ${parsed.reason}: ${JSON.stringify(buffered.toString("latin1").slice(0, 200))}`,
          );
          socket.destroy();
          return;
        }
        buffered = buffered.subarray(parsed.consumed);
        answer(socket, parsed.request, connection);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    seen,
    anomalies,
    register: (pinboardUrl, token, namespace) => registration.register(pinboardUrl, token, namespace, url),
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
