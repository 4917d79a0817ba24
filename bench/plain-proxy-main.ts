/**
 * The baseline: the plainest reverse proxy Node offers. node:http only, a keep-alive agent, the
 * request and the answer piped through as they come (so a chunked answer stays chunked and a
 * Content-Length one keeps its length). No routing, Redis, auth or attestation: what Pinboard
 * adds is measured against this. Every request goes to BENCH_UPSTREAM + its path.
 *
 * Prints {"bench":"ready","url":…,"pid":…}; exits when stdin closes or on SIGTERM. Answers
 * `alloc-start` / `alloc-stop` on stdin like the Pinboard child (alloc-meter.ts).
 */
import { Agent, createServer, type IncomingHttpHeaders, request } from "node:http";
import type { AddressInfo } from "node:net";
import { createInterface } from "node:readline";
import { AllocationMeter, answerAllocation } from "./alloc-meter.ts";
import { exitWithParent } from "./child-lifetime.ts";

const HOP_BY_HOP = ["connection", "keep-alive", "proxy-connection", "te", "trailer", "upgrade"];

const upstream = new URL(process.env.BENCH_UPSTREAM ?? "");
const base = upstream.pathname.replace(/\/+$/, "");
const agent = new Agent({ keepAlive: true });

function endToEnd(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  const out = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

const server = createServer((req, res) => {
  const options = {
    host: upstream.hostname,
    port: upstream.port,
    method: req.method,
    path: base + req.url,
    headers: endToEnd(req.headers),
    agent,
  };
  const forward = request(options, (answer) => {
    res.writeHead(answer.statusCode ?? 502, endToEnd(answer.headers));
    answer.pipe(res);
  });
  forward.once("error", () => (res.headersSent ? res.destroy() : res.writeHead(502).end()));
  req.pipe(forward);
});
// As long as Pinboard keeps idle client connections (src/node.ts).
server.keepAliveTimeout = 65_000;
server.listen(0, "127.0.0.1", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ bench: "ready", url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
exitWithParent(server);
const allocation = new AllocationMeter();
const say = (message: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(message)}\n`);
createInterface({ input: process.stdin }).on("line", (line) => answerAllocation(allocation, line.trim(), say));
