import { createServer, type IncomingMessage } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { firstRawHeader, joinedRawHeader } from "../../../../src/runtime/node/transport/raw-header.ts";

/**
 * Header lines as a client may send them: repeated, in any case, empty. node:http answers 400
 * itself to an HTTP/1.1 request without Host (that one never reaches a handler); a repeated Host
 * does reach it, and headers.host keeps the first.
 */
const CASES: string[][] = [
  ["Host: a.example"],
  ["hOST: A.Example:8080"],
  ["Host:"],
  ["host: a.example:8080", "HOST: b.example"],
  [],
  ["Host: h", "X-Pinboard-Refusal: lease-unhealthy"],
  ["Host: h", "x-pinboard-refusal: lease-unhealthy", "X-PINBOARD-REFUSAL: other"],
  ["Host: h", "X-Pinboard-Refusal:", "x-pinboard-refusal: lease-unhealthy"],
  ["Host: h", "X-Pinboard-Refusals: lease-unhealthy", "X-Pinboard-Refusa: x"],
];
const REACHING = CASES.length - 1;

describe("raw header reads agree with node:http's headers object", () => {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => {
    seen.push(req);
    res.end();
  });
  let port = 0;
  beforeAll(async () => {
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("first Host as headers.host keeps it, every refusal value joined as headers[name] joins it", async () => {
    for (const lines of CASES) {
      await new Promise<void>((resolve, reject) => {
        const socket = connect(port, "127.0.0.1", () =>
          socket.write(`GET / HTTP/1.1\r\n${lines.map((l) => `${l}\r\n`).join("")}Connection: close\r\n\r\n`),
        );
        socket.on("error", reject);
        socket.on("data", () => {});
        socket.on("close", () => resolve());
      });
    }
    expect(seen).toHaveLength(REACHING);
    for (const req of seen) {
      expect(firstRawHeader(req.rawHeaders, "host")).toBe(req.headers.host);
      expect(joinedRawHeader(req.rawHeaders, "x-pinboard-refusal")).toBe(
        String(req.headers["x-pinboard-refusal"] ?? ""),
      );
    }
  });
});
