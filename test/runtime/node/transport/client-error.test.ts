import { createServer, type Server } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerClientError } from "../../../../src/runtime/node/transport/client-error.ts";

/**
 * answerClientError on a bare node:http server (wired as server.ts wires it), byte for byte over
 * a raw socket: a 400 for a HEAD the parser could not read is headers only, whether the HEAD came
 * alone, after a pipelined GET still being answered, or with its bad line in a later write; the
 * same error on a GET carries its body. head-parse-error.test.ts checks the same through Pinboard.
 */

/** The 400 to a HEAD, whole: no byte after the blank line, and the connection closes. */
const HEAD_400 =
  "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
const GET_400 =
  'HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 23\r\nconnection: close\r\n\r\n{"error":"bad request"}';
const BAD = "Bad Header: x\r\n\r\n";
const head = (path: string) => `HEAD ${path} HTTP/1.1\r\nHost: t\r\n`;
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: t\r\n`;

let server: Server;
let port: number;
beforeAll(async () => {
  server = createServer((req, res) => {
    res.sendDate = false;
    // /slow is still being answered when the next request's bad head arrives.
    setTimeout(() => res.writeHead(200, { "content-length": "2" }).end("ok"), req.url === "/slow" ? 200 : 0);
  });
  server.on("clientError", answerClientError);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

/** Writes the parts (100 ms apart) and resolves with every byte received once the server closes. */
function exchange(parts: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("latin1")));
    for (const [i, part] of parts.entries()) setTimeout(() => socket.write(part), i * 100);
    setTimeout(() => socket.destroy(new Error("the server did not close the connection")), 3000);
  });
}

/** The bytes after the pipelined 200 (asserted to be the first answer, with its body "ok" unless to a HEAD). */
function afterOk(received: string, body = "ok"): string {
  const ok = new RegExp(`^HTTP/1\\.1 200 OK\r\n[\\s\\S]*?\r\n\r\n${body}`).exec(received);
  expect(ok, received).not.toBeNull();
  return received.slice(ok![0].length);
}

describe("a parser error answered to a HEAD", () => {
  it("alone, in one write: 400 with headers only", async () => {
    expect(await exchange([head("/a") + BAD])).toBe(HEAD_400);
  });

  it("after a pipelined GET still being answered: the GET's 200, then 400 with headers only", async () => {
    expect(afterOk(await exchange([`${get("/slow")}\r\n${head("/b")}${BAD}`]))).toBe(HEAD_400);
  });

  it("after a pipelined GET already answered: the GET's 200, then 400 with headers only", async () => {
    expect(afterOk(await exchange([`${get("/fast")}\r\n${head("/c")}${BAD}`]))).toBe(HEAD_400);
  });

  it("with the bad line in a later write (the method cannot be told): 400 with headers only", async () => {
    expect(await exchange([head("/d"), BAD])).toBe(HEAD_400);
  });

  it("on a GET instead: 400 with its body", async () => {
    expect(await exchange([get("/e") + BAD])).toBe(GET_400);
    expect(afterOk(await exchange([`${head("/f")}\r\n${get("/g")}${BAD}`]), "")).toBe(GET_400);
  });
});
