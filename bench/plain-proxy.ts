/**
 * The baseline: the plainest reverse proxy Node offers. node:http only, a keep-alive agent, the
 * request and the answer piped through as they come (so a chunked answer stays chunked and a
 * Content-Length one keeps its length). No routing, Redis, auth or attestation: what Pinboard
 * adds is measured against this. Every request goes to `upstream` + its path.
 *
 * `before` (the plain-resolve row, bench/resolve-proxy-main.ts) runs first for each request and
 * says whether to forward it; without it the request is forwarded at once.
 *
 * Prints {"bench":"ready","url":…,"pid":…}; exits when stdin closes or on SIGTERM. Answers
 * `alloc-start` / `alloc-stop` on stdin like the Pinboard child (alloc-meter.ts).
 */
import {
  Agent,
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { AllocationMeter, answerAllocation } from "./alloc-meter.ts";
import { exitWithParent } from "./child-lifetime.ts";

/** Decides before the forward: false answers 502 instead. */
export type BeforeForward = (req: IncomingMessage) => Promise<boolean>;

const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"];

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

export function startPlainProxy(upstreamUrl: string, before?: BeforeForward): void {
  const upstream = new URL(upstreamUrl);
  const base = upstream.pathname.replace(/\/+$/, "");
  const agent = new Agent({ keepAlive: true });

  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const options = {
      host: upstream.hostname,
      port: upstream.port,
      method: req.method,
      path: base + req.url,
      headers: endToEnd(req.headers),
      agent,
    };
    const outgoing = request(options, (answer) => {
      res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
      answer.pipe(res);
    });
    outgoing.once("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
    req.pipe(outgoing);
  };
  const refuse = (res: ServerResponse) => res.writeHead(502).end();

  const server = createServer(
    before
      ? (req, res) =>
          before(req).then(
            (go) => (go ? forward(req, res) : refuse(res)),
            () => refuse(res),
          )
      : forward,
  );
  // As long as Pinboard keeps idle client connections (src/node.ts).
  server.keepAliveTimeout = 65_000;
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as AddressInfo;
    say({ bench: "ready", url: `http://127.0.0.1:${port}`, pid: process.pid });
  });
  exitWithParent(server);
  const allocation = new AllocationMeter();
  createInterface({ input: process.stdin }).on("line", (line) => answerAllocation(allocation, line.trim(), say));
}

function say(message: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}
