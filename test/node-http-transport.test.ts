import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeTransport } from "../src/node/http-transport.ts";
import { freePort } from "../src/node/free-port.ts";
import { completeBody, isUndecoded } from "../src/resolve/transport-marks.ts";

/**
 * The Node entry's transport to workers (src/node/http-transport.ts) against a real HTTP server
 * on loopback: it must answer like fetch does for every call Pinboard makes, while handing small
 * bodies over whole and passing content-encoding through.
 */

const BIG = 300 * 1024;
let server: Server;
let base: string;
/** /slow requests whose connection closed before their answer. */
const cutShort: string[] = [];
const seen: Array<{ method: string; url: string; headers: Record<string, string | string[] | undefined> }> = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const url = (req.url ?? "/").split("?")[0];
      if (url === "/small") {
        res.setHeader("set-cookie", ["a=1", "b=2"]);
        res.setHeader("content-type", "text/plain");
        res.end("hello");
      } else if (url === "/big") res.end(Buffer.alloc(BIG, 7));
      else if (url === "/chunked") {
        res.write("part-1,");
        setTimeout(() => res.end("part-2"), 20);
      } else if (url === "/gzip") {
        res.writeHead(200, { "content-encoding": "gzip", "content-length": String(GZIPPED.length) });
        res.end(GZIPPED);
      } else if (url === "/redirect") {
        res.writeHead(302, { location: "/small" });
        res.end();
      } else if (url === "/empty") {
        res.writeHead(204);
        res.end();
      } else if (url === "/echo") res.end(Buffer.concat(chunks));
      else if (url === "/slow") {
        const timer = setTimeout(() => res.end("late"), 2000);
        res.once("close", () => {
          clearTimeout(timer);
          if (!res.writableFinished) cutShort.push(req.url ?? "");
        });
      } else if (url === "/trickle") {
        res.write("part-1,");
        setTimeout(() => res.end("part-2"), 300);
      }
      else if (url === "/short") {
        // Announces more than it sends, then drops the connection.
        res.writeHead(200, { "content-length": "100" });
        res.write("only-this");
        setTimeout(() => res.socket?.destroy(), 10);
      } else res.end(`unknown ${url}`);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

const GZIPPED = gzipSync(Buffer.from("compressed payload ".repeat(50)));
const { fetch: nodeFetch, callWorker } = createNodeTransport();

describe("the Node transport's fetch", () => {
  it("answers a small body whole, with every header (set-cookie twice) and the request headers sent", async () => {
    const res = await nodeFetch(`${base}/small?q=1`, { headers: new Headers({ "x-test": "yes", "pinboard-epoch": "42" }), redirect: "manual" });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual(["a=1", "b=2"]);
    expect(new TextDecoder().decode(completeBody(res)!)).toBe("hello");
    expect(await res.text()).toBe("hello");
    const last = seen[seen.length - 1]!;
    expect(last).toMatchObject({ method: "GET", url: "/small?q=1" });
    expect(last.headers["x-test"]).toBe("yes");
    expect(last.headers["pinboard-epoch"]).toBe("42");
  });

  it("streams a body over the whole-body limit and one without a length", async () => {
    const big = await nodeFetch(`${base}/big`);
    expect(completeBody(big)).toBeUndefined();
    expect((await big.arrayBuffer()).byteLength).toBe(BIG);
    const chunked = await nodeFetch(`${base}/chunked`);
    expect(completeBody(chunked)).toBeUndefined();
    expect(await chunked.text()).toBe("part-1,part-2");
  });

  it("passes content-encoding through undecoded, and marks it so", async () => {
    const res = await nodeFetch(`${base}/gzip`);
    expect(res.headers.get("content-encoding")).toBe("gzip");
    expect(isUndecoded(res)).toBe(true);
    expect(Buffer.from(await res.arrayBuffer()).equals(GZIPPED)).toBe(true);
  });

  it("never follows a redirect; 204 and HEAD have no body", async () => {
    const redirect = await nodeFetch(`${base}/redirect`, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    expect(redirect.headers.get("location")).toBe("/small");
    const empty = await nodeFetch(`${base}/empty`);
    expect(empty.status).toBe(204);
    expect(empty.body).toBeNull();
    const head = await nodeFetch(`${base}/small`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe("");
  });

  it("fails like fetch: TypeError with the socket error as cause when nothing listens", async () => {
    const port = await freePort();
    const err = await nodeFetch(`http://127.0.0.1:${port}/x`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
    expect((err as TypeError).message).toBe("fetch failed");
    expect(((err as TypeError).cause as { code?: string }).code).toBe("ECONNREFUSED");
  });

  it("rejects a body cut short of its Content-Length", async () => {
    const err = await nodeFetch(`${base}/short`).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TypeError);
  });

  it("aborts on the signal, before and while waiting", async () => {
    const before = new AbortController();
    before.abort();
    await expect(nodeFetch(`${base}/small`, { signal: before.signal })).rejects.toThrow();
    const during = new AbortController();
    const started = Date.now();
    setTimeout(() => during.abort(), 50);
    await expect(nodeFetch(`${base}/slow`, { signal: during.signal })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(1500);
  });

  it("hands a request with a body to the fallback fetch", async () => {
    const res = await nodeFetch(`${base}/echo`, { method: "POST", body: "payload", headers: { "content-type": "text/plain" } });
    expect(await res.text()).toBe("payload");
    expect(completeBody(res)).toBeUndefined();
  });
});

/** A client link the test drives: `leave()` is the client going away. */
function testClient() {
  let gone = false;
  const listeners = new Set<() => void>();
  return {
    link: {
      get gone() {
        return gone;
      },
      onGone(listener: () => void) {
        listeners.add(listener);
        return () => void listeners.delete(listener);
      },
    },
    leave() {
      gone = true;
      for (const l of listeners) l();
      listeners.clear();
    },
    listening: () => listeners.size,
  };
}

describe("the Node transport's forward call", () => {
  const get = (path: string, timeoutMs: number, client = testClient()) =>
    callWorker({ url: `${base}${path}`, init: { method: "GET", headers: {}, redirect: "manual" }, timeoutMs, client: client.link });

  it("answers a small body whole and stops listening to the client", async () => {
    const client = testClient();
    const result = await get("/small", 5000, client);
    expect(result.kind).toBe("response");
    const res = (result as { response: Response }).response;
    expect(new TextDecoder().decode(completeBody(res)!)).toBe("hello");
    expect(client.listening()).toBe(0);
  });

  it("times out waiting for the answer and closes the worker's connection", async () => {
    const started = Date.now();
    const tag = `/slow?timeout-${started}`;
    expect((await get(tag, 100)).kind).toBe("timeout");
    expect(Date.now() - started).toBeLessThan(1500);
    await expect.poll(() => cutShort.includes(tag)).toBe(true);
  });

  it("ends when the client goes, before or while waiting", async () => {
    const before = testClient();
    before.leave();
    const count = seen.length;
    expect((await get("/small", 5000, before)).kind).toBe("aborted");
    expect(seen.length).toBe(count);

    const during = testClient();
    const tag = `/slow?client-${Date.now()}`;
    setTimeout(() => during.leave(), 50);
    expect((await get(tag, 5000, during)).kind).toBe("aborted");
    await expect.poll(() => cutShort.includes(tag)).toBe(true);
  });

  it("lets a streamed body take longer than the timeout once the answer has begun", async () => {
    const client = testClient();
    const result = await get("/trickle", 150, client);
    expect(result.kind).toBe("response");
    expect(client.listening()).toBe(0);
    expect(await (result as { response: Response }).response.text()).toBe("part-1,part-2");
  });

  it("reports a failure with fetch's TypeError when nothing listens", async () => {
    const port = await freePort();
    const result = await callWorker({ url: `http://127.0.0.1:${port}/x`, init: { method: "GET" }, timeoutMs: 5000, client: testClient().link });
    expect(result.kind).toBe("failed");
    const error = (result as { error: unknown }).error;
    expect(error).toBeInstanceOf(TypeError);
    expect(((error as TypeError).cause as { code?: string }).code).toBe("ECONNREFUSED");
  });

  it("sends a request with a body through fetch, with the same timeout", async () => {
    const post = (path: string, timeoutMs: number) =>
      callWorker({ url: `${base}${path}`, init: { method: "POST", body: "payload", headers: { "content-type": "text/plain" } }, timeoutMs, client: testClient().link });
    const echoed = await post("/echo", 5000);
    expect(echoed.kind).toBe("response");
    expect(await (echoed as { response: Response }).response.text()).toBe("payload");
    expect((await post("/slow", 100)).kind).toBe("timeout");
  });
});

/**
 * A worker in its own process whose keep-alive timer closes an idle pooled connection while
 * Pinboard's event loop is stalled, so Pinboard still takes the dead socket from its pool: the
 * race behind a 502 from a live worker. Each connection's close is written to `closes`, which the
 * stalled test reads synchronously, so the request goes out exactly after the close, every time.
 */
describe("a pooled connection the worker closed while Pinboard was stalled", () => {
  const WORKER = `
    import { createServer } from "node:http";
    import { appendFileSync } from "node:fs";
    let connections = 0;
    const server = createServer((req, res) => res.end(req.method + " on connection " + req.socket.id));
    server.on("connection", (socket) => {
      socket.id = ++connections;
      socket.on("close", () => appendFileSync(process.argv[1], "closed\\n"));
    });
    server.keepAliveTimeout = 2000; // announced as Keep-Alive: timeout=2, so Pinboard may reuse it for 1 s
    server.listen(0, "127.0.0.1", () => console.log(server.address().port));
  `;
  let worker: ChildProcess;
  let workerBase: string;
  let closes: string;

  beforeAll(async () => {
    closes = join(mkdtempSync(join(tmpdir(), "pinboard-keepalive-")), "closes");
    writeFileSync(closes, "");
    worker = spawn(process.execPath, ["--input-type=module", "-e", WORKER, closes], { stdio: ["ignore", "pipe", "inherit"] });
    const [line] = (await once(worker.stdout!, "data")) as [Buffer];
    workerBase = `http://127.0.0.1:${line.toString().trim()}`;
  });
  afterAll(() => void worker.kill());

  const stallUntilClosed = (count: number) => {
    const until = Date.now() + 15_000;
    while (readFileSync(closes, "utf8").split("\n").length - 1 < count) {
      if (Date.now() > until) throw new Error("the worker never closed its idle connections");
    }
  };

  it("sends an idempotent forward again on a new connection, and fails a POST as unreachable", async () => {
    const forwards = createNodeTransport();
    const posts = createNodeTransport();
    const forward = (path: string) =>
      forwards.callWorker({ url: `${workerBase}${path}`, init: { method: "GET", headers: {} }, timeoutMs: 5000, client: testClient().link });
    const first = await forward("/a");
    expect(await (first as { response: Response }).response.text()).toBe("GET on connection 1");
    expect(await (await posts.fetch(`${workerBase}/b`, { method: "POST" })).text()).toBe("POST on connection 2");

    // No await from here until both requests are sent: the pool still holds both dead sockets.
    stallUntilClosed(2);
    const again = forward("/a-again");
    const post = posts.fetch(`${workerBase}/b-again`, { method: "POST" }).catch((e: unknown) => e);

    const result = await again;
    expect(result.kind).toBe("response");
    expect(await (result as { response: Response }).response.text()).toBe("GET on connection 3");
    // RFC 9110 §9.2.2: a non-idempotent request is never sent twice on Pinboard's own initiative.
    const err = await post;
    expect(err).toBeInstanceOf(TypeError);
    expect(((err as TypeError).cause as { code?: string }).code).toBe("ECONNRESET");
  });
});
