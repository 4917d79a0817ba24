/**
 * The baseline: a plain reverse proxy in the same runtime and HTTP stack as Pinboard's Node
 * entry (@hono/node-server serving a fetch handler that forwards with the Node entry's own
 * transport, src/node/http-transport.ts) and nothing else: no Redis, no auth, no attestation,
 * no placement. Every request goes
 * to BENCH_UPSTREAM + its path and query; request and response headers pass through minus the
 * hop-by-hop ones, bodies stream.
 *
 * Prints {"bench":"ready","url":…,"pid":…}; exits when stdin closes or on SIGTERM.
 */
import { serve } from "@hono/node-server";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createNodeTransport } from "../src/node/http-transport.ts";
import { exitWithParent } from "./child-lifetime.ts";
import { forwardResponseRecord } from "../src/resolve/headers.ts";
import { completeBody, isUndecoded, rawHeadersOf } from "../src/resolve/transport-marks.ts";

const HOP = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "te", "trailer", "host"];

const upstream = process.env.BENCH_UPSTREAM?.replace(/\/+$/, "");
if (!upstream) {
  console.error("baseline: BENCH_UPSTREAM is required");
  process.exit(1);
}

// The same transport as the Node entry's forwards (node:http for body-less calls, whole small
// bodies as bytes), so the two proxies differ only by what Pinboard adds.
const transport = createNodeTransport().fetch;

async function forward(request: Request): Promise<Response> {
  const url = request.url;
  const pathAndQuery = url.slice(url.indexOf("/", 8));
  const headers = new Headers(request.headers);
  for (const name of HOP) headers.delete(name);
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  try {
    const response = await transport(`${upstream}${pathAndQuery}`, {
      method: request.method,
      headers,
      body: hasBody ? request.body : null,
      redirect: "manual",
      ...(hasBody ? { duplex: "half" } : {}),
    } as RequestInit);
    // Whole small answers go out as bytes with a plain header object, as Pinboard's proxy does.
    const complete = completeBody(response);
    const raw = rawHeadersOf(response);
    if (complete !== undefined && raw !== undefined) {
      return new Response(complete, { status: response.status, headers: forwardResponseRecord(raw) as unknown as Record<string, string> });
    }
    const out = new Headers(response.headers);
    for (const name of HOP) out.delete(name);
    // undici (a request with a body) has already decoded any content-encoding; the length no longer holds.
    if (!isUndecoded(response) && out.has("content-encoding")) {
      out.delete("content-encoding");
      out.delete("content-length");
    }
    const init = { status: response.status, statusText: response.statusText, headers: out };
    return new Response(response.body, init);
  } catch {
    return new Response("bad gateway", { status: 502 });
  }
}

const server = serve({ fetch: forward, port: 0, hostname: "127.0.0.1" }) as Server;
server.once("listening", () => {
  const { port } = server.address() as AddressInfo;
  process.stdout.write(`${JSON.stringify({ bench: "ready", url: `http://127.0.0.1:${port}`, pid: process.pid })}\n`);
});
exitWithParent(server);
