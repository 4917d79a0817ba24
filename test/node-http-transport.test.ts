import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createNodeFetch } from "../src/node/http-transport.ts";
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
      else if (url === "/slow") setTimeout(() => res.end("late"), 2000);
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
const nodeFetch = createNodeFetch();

describe("createNodeFetch", () => {
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
