import { type ChildProcess, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import {
  createServer,
  get as httpGet,
  type IncomingHttpHeaders,
  type IncomingMessage,
  request,
  type Server,
  type ServerResponse,
} from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { carriesBody, requestFraming } from "../../../../src/data-plane/framing.ts";
import { RawHeaderSource } from "../../../../src/data-plane/inbound.ts";
import type { Delivery, Forward } from "../../../../src/data-plane/transport.ts";
import { textAnswer } from "../../../../src/errors/pinboard-error.ts";
import { freePort } from "../../../../src/runtime/node/process/free-port.ts";
import { socketLink } from "../../../../src/runtime/node/transport/client-link.ts";
import { NodeHttpTransport } from "../../../../src/runtime/node/transport/http-transport.ts";
import { OriginCache } from "../../../../src/runtime/node/transport/origins.ts";
import { rawSocketRequest } from "../../../support/raw-socket.ts";

/**
 * The Node entry's transport to workers (src/runtime/node/transport/http-transport.ts) between real
 * servers on loopback: a client talks to a "front" node:http server, whose handler hands the
 * request to NodeHttpTransport as the data plane does, and the transport talks to a test worker.
 * What the client receives, what the worker saw, each send's Delivery and each release are
 * checked exactly.
 */

const BIG = 300 * 1024;
const BIG_BODY = randomBytes(BIG);
const GZIPPED = gzipSync(Buffer.from("compressed payload ".repeat(50)));
/** The request headers every forward carries (the core's attested headers stand in). */
const FORWARD_HEADERS = { "x-test": "yes", "pinboard-epoch": "42" };

// ---------------------------------------------------------------------------------------------
// The front: the data plane's use of the transport, as a node:http server.

/** One front request: what its send came to and each release, with the client response's state then. */
interface Exchange {
  forward?: Forward;
  delivery?: Delivery<void>;
  error?: unknown;
  releases: Array<{ finished: boolean; destroyed: boolean }>;
  /** The client's response has closed: every release the transport makes has been made by then. */
  closed: boolean;
}

interface Front {
  base: string;
  /** By the front request's url (each test uses its own). */
  exchanges: Map<string, Exchange>;
  close(): Promise<void>;
}

/**
 * Starts a front for `transport` on loopback. Per request, from its headers: `x-worker` (the
 * advertise URL; `workerBase()` otherwise), `x-timeout-ms` (5000), `x-relay-refusal: true`,
 * `x-leave-first: true` (the send starts only once the client's connection has closed).
 * `beforeSend` runs before the send (the stale-socket case holds requests there).
 */
async function startFront(
  transport: NodeHttpTransport,
  workerBase: () => string,
  beforeSend?: (req: IncomingMessage) => Promise<void>,
): Promise<Front> {
  const exchanges = new Map<string, Exchange>();
  const server = createServer((req, res) => void handle(req, res));
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const exchange: Exchange = { releases: [], closed: false };
    exchanges.set(req.url ?? "", exchange);
    // Registered before the transport's own listener; read only after the emit is over.
    res.once("close", () => (exchange.closed = true));
    const headers: Record<string, string> = { ...FORWARD_HEADERS };
    const contentType = req.headers["content-type"];
    if (contentType !== undefined) headers["content-type"] = contentType;
    const framing = requestFraming(req.method ?? "GET", new RawHeaderSource(req.rawHeaders));
    const withBody = carriesBody(framing);
    const forward: Forward = {
      advertiseUrl: header(req, "x-worker") ?? workerBase(),
      pathAndQuery: req.url ?? "/",
      method: req.method ?? "GET",
      headers,
      // A send made again carries headers signed anew: here marked, for the worker to tell.
      reattested: async () => ({ ...headers, "x-sent": "again" }),
      upgrade: false,
      withBody,
      framing,
      relayRefusal: header(req, "x-relay-refusal") === "true",
      timeoutMs: Number(header(req, "x-timeout-ms") ?? 5000),
      uploadTimeoutMs: 0,
    };
    exchange.forward = forward;
    if (header(req, "x-leave-first") === "true" && !req.socket.destroyed) await once(req.socket, "close");
    if (beforeSend) await beforeSend(req);
    const link = transport.for(req, res, socketLink(req.socket, res));
    const release = () => exchange.releases.push({ finished: res.writableFinished, destroyed: res.destroyed });
    try {
      const delivery = await link.send(forward, release);
      exchange.delivery = delivery;
      if (delivery.kind === "answered") return;
      if (delivery.kind === "refused" && delivery.relay !== null) {
        // The core sends a relay once the refused row is released, or drops it when that failed.
        if (header(req, "x-drop-relay") === "true") {
          delivery.relay.drop();
          link.reply(textAnswer(502, "relay dropped"));
        } else delivery.relay.send();
        return;
      }
      link.reply(textAnswer(502, JSON.stringify(delivery)));
    } catch (err) {
      exchange.error = err;
      link.reply(textAnswer(500, String(err)));
    }
  };
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    exchanges,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const header = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name];
  return typeof value === "string" ? value : undefined;
};

// ---------------------------------------------------------------------------------------------
// The client.

interface Got {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** One request on a fresh connection (node:http never decodes a body or follows a redirect). */
function call(
  base: string,
  path: string,
  options: {
    method?: string;
    headers?: Record<string, string>;
    body?: Buffer | string;
    chunks?: Array<Buffer | string>;
  } = {},
): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${base}${path}`,
      { method: options.method ?? "GET", headers: options.headers, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("error", reject);
        res.on("end", () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }),
        );
      },
    );
    req.on("error", reject);
    if (options.chunks) {
      // No Content-Length: node:http sends the body chunked.
      for (const chunk of options.chunks) req.write(chunk);
      req.end();
    } else req.end(options.body);
  });
}

/** The front's 502 carrying a Delivery, as the client reads it. */
const deliveryOf = (got: Got): unknown => {
  expect(got.status).toBe(502);
  expect(got.headers["content-type"]).toBe("text/plain; charset=utf-8");
  return JSON.parse(got.body.toString("utf8"));
};

// ---------------------------------------------------------------------------------------------
// The test worker, in this process.

let worker: Server, workerBase: string, front: Front;
const transport = new NodeHttpTransport((err) => backgroundErrors.push(err));
const backgroundErrors: unknown[] = [];
/** Requests the worker saw, with their header lines as received. */
const seen: Array<{ method: string; url: string; rawHeaders: string[]; body: Buffer }> = [];
/** Worker requests (by url) whose connection closed before their answer was finished. */
const cutShort: string[] = [];
/** Worker requests (by url) that have arrived (head read). */
const arrived: string[] = [];

beforeAll(async () => {
  worker = createServer((req, res) => {
    arrived.push(req.url ?? "");
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    res.once("close", () => {
      if (!res.writableFinished) cutShort.push(req.url ?? "");
    });
    req.on("end", () => {
      seen.push({
        method: req.method ?? "",
        url: req.url ?? "",
        rawHeaders: req.rawHeaders,
        body: Buffer.concat(chunks),
      });
      const path = (req.url ?? "/").split("?")[0];
      if (path === "/small" || path === "/prefix/small") {
        res.setHeader("set-cookie", ["a=1", "b=2"]);
        res.setHeader("content-type", "text/plain");
        // Hop-by-hop (named by Connection) and Pinboard's own: neither reaches the client.
        res.setHeader("connection", "keep-alive, x-hop");
        res.setHeader("x-hop", "secret");
        res.setHeader("pinboard-internal", "no");
        res.setHeader("x-worker", "kept");
        // Set by hand: node:http leaves it out of a HEAD answer otherwise.
        res.setHeader("content-length", "5");
        res.end("hello");
      } else if (path === "/big") {
        res.writeHead(200, { "content-length": String(BIG) });
        res.end(BIG_BODY);
      } else if (path === "/chunked") {
        res.write("part-1,");
        setTimeout(() => res.end("part-2"), 20);
      } else if (path === "/trailers") {
        res.writeHead(200, { trailer: "x-checksum" });
        res.write("with-");
        res.addTrailers({ "x-checksum": "abc" });
        res.end("trailers");
      } else if (path === "/gzip") {
        res.writeHead(200, {
          "content-encoding": "gzip",
          "content-length": String(GZIPPED.length),
          "content-type": "text/plain",
        });
        res.end(GZIPPED);
      } else if (path === "/redirect") {
        res.writeHead(302, { location: "/small" });
        res.end();
      } else if (path === "/empty") {
        res.writeHead(204);
        res.end();
      } else if (path === "/echo") {
        res.writeHead(200, { "content-type": "application/octet-stream" });
        res.end(Buffer.concat(chunks));
      } else if (path === "/hang") {
        // Never answers; its connection's close is recorded in cutShort.
      } else if (path === "/trickle") {
        // The head and a first part at once, the rest well after the forward's timeout.
        const timeoutMs = Number(new URL(req.url ?? "/", "http://w").searchParams.get("after") ?? "0");
        res.write("part-1,");
        setTimeout(() => res.end("part-2"), timeoutMs);
      } else if (path === "/hold") {
        // A first part, then nothing until the connection closes.
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("part-1,");
      } else if (path === "/short") {
        // Announces more than it sends, then drops the connection.
        res.writeHead(200, { "content-length": "100" });
        res.write("only-this", () => res.socket?.destroy());
      } else if (path === "/short-chunked") {
        // One chunk, then the connection drops without the last chunk.
        res.writeHead(200, { "content-type": "text/plain" });
        res.write("only-this", () => res.socket?.destroy());
      } else if (path === "/refuse") {
        res.writeHead(503, { "pinned-refusal": "lease-unhealthy", "retry-after": "1", "content-type": "text/plain" });
        res.end("lease unhealthy");
      } else if (path === "/drop") {
        // The connection closed without a byte of answer.
        req.socket.destroy();
      } else if (path === "/switch") {
        // 101 to a request that asked for no upgrade, written on the socket itself.
        req.socket.write("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: other\r\n\r\n");
      } else res.end(`unknown ${path}`);
    });
  });
  await new Promise<void>((resolve) => worker.listen(0, "127.0.0.1", resolve));
  workerBase = `http://127.0.0.1:${(worker.address() as AddressInfo).port}`;
  front = await startFront(transport, () => workerBase);
});
afterAll(async () => {
  transport.close();
  await front.close();
  worker.closeAllConnections();
  await new Promise<void>((resolve) => worker.close(() => resolve()));
  expect(backgroundErrors).toEqual([]);
});

const lastSeen = (url: string) => {
  const found = seen.filter((s) => s.url === url);
  expect(found.length).toBe(1);
  return found[0]!;
};
const exchange = (url: string, from: Front = front): Exchange => {
  const found = from.exchanges.get(url);
  if (!found) throw new Error(`no exchange for ${url}`);
  return found;
};
/** The releases of an exchange once its client response has closed (none can come later). */
const releasesOf = async (url: string, from: Front = front) => {
  await expect.poll(() => from.exchanges.get(url)?.closed).toBe(true);
  return exchange(url, from).releases;
};
/** Header lines with the Date value replaced, so they can be compared exactly. */
const normalised = (lines: Array<[string, string]>) =>
  lines.map(([name, value]): [string, string] => [name, name.toLowerCase() === "date" ? "<date>" : value]);

/** The client's header lines of /small (and of HEAD /small): filtered, in order, the date masked. */
const SMALL_ANSWER_HEAD = [
  ["set-cookie", "a=1"],
  ["set-cookie", "b=2"],
  ["content-type", "text/plain"],
  ["x-worker", "kept"],
  ["content-length", "5"],
  ["date", "<date>"],
  ["x-accel-buffering", "no"],
  ["Connection", "close"],
];

describe("NodeHttpTransport: answers", () => {
  it("relays a small answer with every header (set-cookie twice), and the worker sees only the forward's headers and its own Host", async () => {
    const got = await rawSocketRequest(front.base, {
      path: "/small?q=1",
      headers: [
        ["X-Client-Only", "1"],
        ["TE", "trailers"],
        ["Keep-Alive", "timeout=9"],
        ["Proxy-Authorization", "Basic eA=="],
      ],
    });
    expect(got.status).toBe(200);
    expect(got.body).toBe("hello");
    for (const [name, value] of got.headers)
      if (name.toLowerCase() === "date") expect(Number.isNaN(Date.parse(value))).toBe(false);
    expect(normalised(got.headers)).toEqual(SMALL_ANSWER_HEAD);

    const request = lastSeen("/small?q=1");
    expect(request.method).toBe("GET");
    const pairs: Array<[string, string]> = [];
    for (let i = 0; i < request.rawHeaders.length; i += 2)
      pairs.push([request.rawHeaders[i]!, request.rawHeaders[i + 1]!]);
    // The worker's Host first (RFC 9112 §3.2), the client's keep-alive for this hop, then the forward's headers.
    expect(pairs).toEqual([
      ["host", workerBase.slice("http://".length)],
      ["connection", "keep-alive"],
      ["x-test", "yes"],
      ["pinboard-epoch", "42"],
    ]);
    expect(exchange("/small?q=1").delivery).toEqual({ kind: "answered", status: 200, result: undefined });
    expect(await releasesOf("/small?q=1")).toEqual([{ finished: true, destroyed: false }]);
  });

  it("sends to an advertise URL's path prefix", async () => {
    const got = await call(front.base, "/small?p=1", { headers: { "x-worker": `${workerBase}/prefix/` } });
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe("hello");
    expect(lastSeen("/prefix/small?p=1").method).toBe("GET");
  });

  it("pipes a 300 KiB Content-Length body and a chunked body byte for byte, releasing after each body", async () => {
    const big = await call(front.base, "/big?1");
    expect(big.status).toBe(200);
    expect(big.headers["content-length"]).toBe(String(BIG));
    expect(big.headers["transfer-encoding"]).toBeUndefined();
    expect(big.body.length).toBe(BIG);
    expect(big.body.equals(BIG_BODY)).toBe(true);
    expect(exchange("/big?1").delivery).toEqual({ kind: "answered", status: 200, result: undefined });
    expect(await releasesOf("/big?1")).toEqual([{ finished: true, destroyed: false }]);

    const chunked = await call(front.base, "/chunked?1");
    expect(chunked.status).toBe(200);
    expect(chunked.headers["transfer-encoding"]).toBe("chunked");
    expect(chunked.headers["content-length"]).toBeUndefined();
    expect(chunked.body.toString()).toBe("part-1,part-2");
    expect(await releasesOf("/chunked?1")).toEqual([{ finished: true, destroyed: false }]);
  });

  it("passes content-encoding gzip through undecoded", async () => {
    const got = await call(front.base, "/gzip?1", { headers: { "accept-encoding": "gzip" } });
    expect(got.status).toBe(200);
    expect(got.headers["content-encoding"]).toBe("gzip");
    expect(got.headers["content-length"]).toBe(String(GZIPPED.length));
    expect(got.body.equals(GZIPPED)).toBe(true);
    expect(await releasesOf("/gzip?1")).toEqual([{ finished: true, destroyed: false }]);
  });

  it("never follows a redirect", async () => {
    const got = await call(front.base, "/redirect?1");
    expect(got.status).toBe(302);
    expect(got.headers.location).toBe("/small");
    expect(got.body.length).toBe(0);
    expect(seen.filter((s) => s.url === "/small")).toEqual([]);
    expect(exchange("/redirect?1").delivery).toEqual({ kind: "answered", status: 302, result: undefined });
  });

  it("relays a chunked body without its trailers or its Trailer header (hop-by-hop, as on Workers)", async () => {
    const answer = await new Promise<{ body: string; trailers: Record<string, unknown>; names: string[] }>(
      (resolve, reject) => {
        httpGet(`${front.base}/trailers`, (res) => {
          let body = "";
          res.setEncoding("utf8");
          res.on("data", (chunk: string) => (body += chunk));
          res.on("end", () => resolve({ body, trailers: { ...res.trailers }, names: Object.keys(res.headers) }));
        }).on("error", reject);
      },
    );
    expect(answer.body).toBe("with-trailers");
    expect(answer.trailers).toEqual({});
    expect(answer.names).not.toContain("trailer");
    expect(answer.names).toContain("transfer-encoding");
  });

  it("relays 204 and a HEAD answer without a body", async () => {
    const empty = await rawSocketRequest(front.base, { path: "/empty?1", headers: [] });
    expect(empty.status).toBe(204);
    expect(empty.body).toBe("");
    expect(empty.headers.map(([n]) => n.toLowerCase())).not.toContain("content-length");
    expect(exchange("/empty?1").delivery).toEqual({ kind: "answered", status: 204, result: undefined });
    expect(await releasesOf("/empty?1")).toEqual([{ finished: true, destroyed: false }]);

    const head = await rawSocketRequest(front.base, { method: "HEAD", path: "/small?head", headers: [] });
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
    expect(normalised(head.headers)).toEqual(SMALL_ANSWER_HEAD);
    expect(lastSeen("/small?head").method).toBe("HEAD");
    expect(await releasesOf("/small?head")).toEqual([{ finished: true, destroyed: false }]);
  });

  it("pipes a request body through, with Content-Length and chunked, byte for byte", async () => {
    const posted = await call(front.base, "/echo?length", {
      method: "POST",
      body: BIG_BODY,
      headers: { "content-type": "application/octet-stream" },
    });
    expect(posted.status).toBe(200);
    expect(posted.body.equals(BIG_BODY)).toBe(true);
    const withLength = lastSeen("/echo?length");
    expect(withLength.method).toBe("POST");
    // The head both forwards carry, as the transport writes it, before the body's framing.
    const sent = ["host", workerBase.slice("http://".length), "connection", "keep-alive", "x-test", "yes"];
    sent.push("pinboard-epoch", "42");
    expect(withLength.rawHeaders).toEqual([
      ...sent,
      "content-type",
      "application/octet-stream",
      "content-length",
      String(BIG),
    ]);

    const parts = [randomBytes(1000), randomBytes(70_000), randomBytes(3)];
    const chunked = await call(front.base, "/echo?chunked", { method: "PUT", chunks: parts });
    expect(chunked.status).toBe(200);
    expect(chunked.body.equals(Buffer.concat(parts))).toBe(true);
    const withoutLength = lastSeen("/echo?chunked");
    expect(withoutLength.method).toBe("PUT");
    expect(withoutLength.rawHeaders).toEqual([...sent, "transfer-encoding", "chunked"]);
    expect(withoutLength.body.equals(Buffer.concat(parts))).toBe(true);
  });
});

describe("NodeHttpTransport: failures and cuts", () => {
  it("reports unreachable, not connected, naming ECONNREFUSED, when nothing listens", async () => {
    const port = await freePort();
    const got = await call(front.base, "/refused?1", { headers: { "x-worker": `http://127.0.0.1:${port}` } });
    expect(deliveryOf(got)).toEqual({
      kind: "unreachable",
      connected: false,
      reason: `connect ECONNREFUSED 127.0.0.1:${port}`,
    });
    expect(await releasesOf("/refused?1")).toEqual([]);
  });

  it("sends a GET once when its fresh connection closes without an answer (only a pooled one goes again)", async () => {
    const own = new NodeHttpTransport((err) => backgroundErrors.push(err));
    const ownFront = await startFront(own, () => workerBase);
    try {
      const got = await call(ownFront.base, "/drop?fresh");
      expect(deliveryOf(got)).toEqual({
        kind: "unreachable",
        connected: true,
        reason: "other side closed (UND_ERR_SOCKET)",
      });
      expect(arrived.filter((url) => url === "/drop?fresh")).toEqual(["/drop?fresh"]);
    } finally {
      own.close();
      await ownFront.close();
    }
  });

  /** A response read with node:http as a client, with the events it emitted. */
  const observe = (path: string) =>
    new Promise<{ events: string[]; body: string; headers: IncomingHttpHeaders; complete: boolean }>((resolve) => {
      const events: string[] = [];
      let body = "";
      request(`${front.base}${path}`, { agent: false }, (res) => {
        res.setEncoding("utf8");
        res.on("data", (c: string) => (body += c));
        res.on("aborted", () => events.push("aborted"));
        res.on("end", () => events.push("end"));
        res.on("error", (err: NodeJS.ErrnoException) => events.push(`error ${err.code}: ${err.message}`));
        res.on("close", () => {
          events.push("close");
          resolve({ events, body, headers: res.headers, complete: res.complete });
        });
      }).end();
    });

  it("leaves a body cut short of its Content-Length unfinished at the client", async () => {
    // node:http as a client: the response is aborted after the bytes the worker sent.
    const { headers, ...observed } = await observe("/short?http");
    expect({ ...observed, length: headers["content-length"] }).toEqual({
      events: ["aborted", "error ECONNRESET: aborted", "close"],
      body: "only-this",
      length: "100",
      complete: false,
    });
    expect(exchange("/short?http").delivery).toEqual({ kind: "answered", status: 200, result: undefined });
    expect(await releasesOf("/short?http")).toEqual([{ finished: false, destroyed: true }]);

    // On the wire: the head announces 100 bytes, the connection closes after 9.
    const raw = await rawSocketRequest(front.base, { path: "/short?raw", headers: [] });
    expect(raw.status).toBe(200);
    expect(raw.headers).toContainEqual(["content-length", "100"]);
    expect(raw.body).toBe("only-this");
  });

  it("leaves a chunked body cut before its last chunk unfinished at the client", async () => {
    const { headers, ...observed } = await observe("/short-chunked?http");
    expect({ ...observed, encoding: headers["transfer-encoding"] }).toEqual({
      events: ["aborted", "error ECONNRESET: aborted", "close"],
      body: "only-this",
      encoding: "chunked",
      complete: false,
    });
    expect(await releasesOf("/short-chunked?http")).toEqual([{ finished: false, destroyed: true }]);
  });

  it("times out before the answer's head and closes the worker's connection", async () => {
    const got = await call(front.base, "/hang?timeout", { headers: { "x-timeout-ms": "100" } });
    expect(deliveryOf(got)).toEqual({ kind: "timeout" });
    await expect.poll(() => cutShort.includes("/hang?timeout")).toBe(true);
    expect(await releasesOf("/hang?timeout")).toEqual([]);
  });

  it("ends as aborted, connected (the worker has the request), when the client leaves while waiting, and closes the worker's connection", async () => {
    const req = request(`${front.base}/hang?client`, { agent: false });
    req.on("error", () => {});
    req.end();
    await expect.poll(() => arrived.includes("/hang?client")).toBe(true);
    req.destroy();
    await expect.poll(() => exchange("/hang?client").delivery).toEqual({ kind: "aborted", connected: true });
    await expect.poll(() => cutShort.includes("/hang?client")).toBe(true);
    expect(await releasesOf("/hang?client")).toEqual([]);
  });

  it("ends as aborted without sending when the client left before the send", async () => {
    const req = request(`${front.base}/small?gone`, { agent: false, headers: { "x-leave-first": "true" } });
    req.on("error", () => {});
    req.end();
    await expect.poll(() => front.exchanges.has("/small?gone")).toBe(true);
    req.destroy();
    await expect.poll(() => exchange("/small?gone").delivery).toEqual({ kind: "aborted", connected: false });
    expect(await releasesOf("/small?gone")).toEqual([]);
    // A later request to the worker arrives after any the transport would have sent.
    await call(front.base, "/small?after-gone");
    expect(arrived).toContain("/small?after-gone");
    expect(arrived).not.toContain("/small?gone");
  });

  it("lets a streamed body take longer than the timeout once the head is in", async () => {
    const got = await call(front.base, "/trickle?after=1500", { headers: { "x-timeout-ms": "400" } });
    expect(got.status).toBe(200);
    expect(got.body.toString()).toBe("part-1,part-2");
    expect(exchange("/trickle?after=1500").delivery).toEqual({ kind: "answered", status: 200, result: undefined });
    expect(await releasesOf("/trickle?after=1500")).toEqual([{ finished: true, destroyed: false }]);
  });

  it("releases once when the client leaves mid-body, and closes the worker's connection", async () => {
    const first = await new Promise<string>((resolve) => {
      const req = request(`${front.base}/hold?mid-body`, { agent: false }, (res) => {
        res.on("error", () => {});
        res.once("data", (c: Buffer) => {
          req.destroy();
          resolve(c.toString());
        });
      });
      req.on("error", () => {});
      req.end();
    });
    expect(first).toBe("part-1,");
    await expect.poll(() => cutShort.includes("/hold?mid-body")).toBe(true);
    expect(await releasesOf("/hold?mid-body")).toEqual([{ finished: false, destroyed: true }]);
    expect(exchange("/hold?mid-body").delivery).toEqual({ kind: "answered", status: 200, result: undefined });
  });

  it("drops an activation refusal without writing anything, unless told to relay it", async () => {
    const dropped = await call(front.base, "/refuse?drop");
    // The front's own 502: the transport wrote nothing (a head of its own would have cut it).
    expect(deliveryOf(dropped)).toEqual({ kind: "refused", relay: null });
    expect(await releasesOf("/refuse?drop")).toEqual([]);

    const relayed = await call(front.base, "/refuse?relay", { headers: { "x-relay-refusal": "true" } });
    expect(relayed.status).toBe(503);
    expect(relayed.body.toString()).toBe("lease unhealthy");
    expect(relayed.headers["pinned-refusal"]).toBeUndefined();
    expect(relayed.headers["retry-after"]).toBe("1");
    expect(relayed.headers["content-type"]).toBe("text/plain");
    expect(relayed.headers["x-accel-buffering"]).toBe("no");
    expect(exchange("/refuse?relay").delivery).toEqual({
      kind: "refused",
      relay: { send: expect.any(Function), drop: expect.any(Function) },
    });
    expect(await releasesOf("/refuse?relay")).toEqual([{ finished: true, destroyed: false }]);

    // A relay the core drops (its release of the row failed): the slot comes back at once and the
    // client gets the core's own answer, nothing of the worker's.
    const droppedRelay = await call(front.base, "/refuse?relay-dropped", {
      headers: { "x-relay-refusal": "true", "x-drop-relay": "true" },
    });
    expect(droppedRelay.status).toBe(502);
    expect(droppedRelay.body.toString()).toBe("relay dropped");
    expect(await releasesOf("/refuse?relay-dropped")).toEqual([{ finished: false, destroyed: false }]);
  });

  it("reports a 101 to a plain request as unreachable, connected", async () => {
    const got = await call(front.base, "/switch?1");
    expect(deliveryOf(got)).toEqual({
      kind: "unreachable",
      connected: true,
      reason: "worker answered 101 to a request without an upgrade",
    });
    expect(await releasesOf("/switch?1")).toEqual([]);
  });
});

describe("OriginCache", () => {
  it("parses an advertise URL once, with and without a path prefix, https on its default port, its origin as undici pools it, and its Host header", () => {
    const origins = new OriginCache();
    const prefixed = origins.of("http://10.0.0.7:8080/pinned/");
    expect(prefixed).toEqual({
      origin: "http://10.0.0.7:8080",
      path: "/pinned",
      hostHeader: "10.0.0.7:8080",
    });
    expect(origins.of("http://10.0.0.7:8080/pinned/")).toBe(prefixed);
    const cases: Array<[url: string, origin: string, path: string, hostHeader: string]> = [
      ["http://worker.internal:9000", "http://worker.internal:9000", "", "worker.internal:9000"],
      ["http://worker.internal", "http://worker.internal", "", "worker.internal"],
      ["https://worker.example.com", "https://worker.example.com", "", "worker.example.com"],
      ["https://worker.example.com:8443/a/b", "https://worker.example.com:8443", "/a/b", "worker.example.com:8443"],
      ["http://[::1]:7000/", "http://[::1]:7000", "", "[::1]:7000"],
      ["https://[::1]:443/", "https://[::1]", "", "[::1]"],
      ["http://Worker.Internal:80", "http://worker.internal", "", "worker.internal"],
    ];
    for (const [url, origin, path, hostHeader] of cases) {
      expect(origins.of(url), url).toEqual({ origin, path, hostHeader });
    }
  });
});

/**
 * A worker in its own process whose keep-alive timer closes an idle pooled connection while
 * Pinboard's event loop is stalled, so Pinboard still takes the dead socket from its pool: the
 * race behind a 502 from a live worker. Each connection's close is written to `closes`, which the
 * stalled front reads synchronously, so the forwards go out exactly after the close, every time.
 */
describe("a pooled connection the worker closed while Pinboard was stalled", () => {
  const WORKER = `
    import { createServer } from "node:http";
    import { appendFileSync } from "node:fs";
    let connections = 0;
    const server = createServer((req, res) => {
      appendFileSync(process.argv[2], req.method + " " + req.url + " " + req.socket.id + " " + (req.headers["x-sent"] ?? "once") + "\\n");
      req.resume();
      req.on("end", () => res.end(req.method + " on connection " + req.socket.id));
    });
    server.on("connection", (socket) => {
      socket.id = ++connections;
      socket.on("close", () => appendFileSync(process.argv[1], "closed\\n"));
    });
    server.keepAliveTimeout = 2000; // announced as Keep-Alive: timeout=2, so Pinboard may reuse it for 1 s
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));
  `;
  let child: ChildProcess, childBase: string, closes: string, requests: string;
  const gets = new NodeHttpTransport((err) => backgroundErrors.push(err));
  const posts = new NodeHttpTransport((err) => backgroundErrors.push(err));
  let getFront: Front;
  let postFront: Front;

  /**
   * Requests with `x-stall` wait here until both have arrived; the second stalls the event loop
   * until the worker closed both idle connections, then lets both through before the loop runs.
   */
  const held: Array<() => void> = [];
  const stallGate = (req: IncomingMessage): Promise<void> => {
    if (header(req, "x-stall") !== "true") return Promise.resolve();
    return new Promise<void>((resolve) => {
      held.push(resolve);
      if (held.length < 2) return;
      const until = Date.now() + 15_000;
      while (readFileSync(closes, "utf8").split("\n").length - 1 < 2) {
        if (Date.now() > until) throw new Error("the worker never closed its idle connections");
      }
      // Both sends start in this turn's microtasks: the pools still hold the dead sockets.
      for (const letThrough of held.splice(0)) letThrough();
    });
  };

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "pinboard-keepalive-"));
    closes = join(dir, "closes");
    requests = join(dir, "requests");
    writeFileSync(closes, "");
    writeFileSync(requests, "");
    child = spawn(process.execPath, ["--input-type=module", "-e", WORKER, closes, requests], {
      stdio: ["ignore", "pipe", "inherit"],
    });
    const [line] = (await once(child.stdout!, "data")) as [Buffer];
    childBase = `http://127.0.0.1:${line.toString().trim()}`;
    getFront = await startFront(gets, () => childBase, stallGate);
    postFront = await startFront(posts, () => childBase, stallGate);
  });
  afterAll(async () => {
    child.kill();
    gets.close();
    posts.close();
    await getFront.close();
    await postFront.close();
  });

  it("sends an idempotent GET again on a new connection, and fails a POST with a body as unreachable", async () => {
    const first = await call(getFront.base, "/a");
    expect(first.body.toString()).toBe("GET on connection 1");
    const post = await call(postFront.base, "/b", { method: "POST", body: "payload" });
    expect(post.body.toString()).toBe("POST on connection 2");

    // Both held at the front until the worker closed both idle pooled connections.
    const [again, postAgain] = await Promise.all([
      call(getFront.base, "/a-again", { headers: { "x-stall": "true" } }),
      call(postFront.base, "/b-again", { method: "POST", body: "payload", headers: { "x-stall": "true" } }),
    ]);

    expect(again.status).toBe(200);
    expect(again.body.toString()).toBe("GET on connection 3");
    expect(getFront.exchanges.get("/a-again")!.delivery).toEqual({ kind: "answered", status: 200, result: undefined });
    expect(await releasesOf("/a-again", getFront)).toEqual([{ finished: true, destroyed: false }]);
    // RFC 9110 §9.2.2: a non-idempotent request is never sent twice on Pinboard's own initiative.
    const delivery = deliveryOf(postAgain);
    expect(delivery).toEqual({
      kind: "unreachable",
      connected: true,
      reason: "other side closed (UND_ERR_SOCKET)",
    });
    expect(await releasesOf("/b-again", postFront)).toEqual([]);
    expect(readFileSync(requests, "utf8").split("\n").filter(Boolean)).toEqual([
      "GET /a 1 once",
      "POST /b 2 once",
      // Sent again with its headers signed anew (Forward.reattested): a worker accepts an attestation once.
      "GET /a-again 3 again",
    ]);
  });
});
