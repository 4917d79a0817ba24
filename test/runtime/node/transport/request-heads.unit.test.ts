import { IncomingMessage } from "node:http";
import { Socket } from "node:net";
import { describe, expect, it } from "vitest";
import {
  isWebSocketRequest,
  isWellFormedHandshake,
  requestedProtocols,
} from "../../../../src/runtime/node/transport/handshake.ts";
import { OriginCache } from "../../../../src/runtime/node/transport/origins.ts";
import { firstRawHeader, joinedRawHeader } from "../../../../src/runtime/node/transport/raw-header.ts";

/**
 * What the Node transport reads off a request head without a socket's traffic: raw header
 * fields, the WebSocket handshake's validity, and an advertise URL's origin, path and Host
 * (raw-header.test.ts compares the raw reads with node:http's own over a real connection).
 */

/** A request head as node:http's parser leaves it (lower-case `headers`, `rawHeaders` as sent). */
function request(method: string, raw: string[]): IncomingMessage {
  const req = new IncomingMessage(new Socket());
  req.method = method;
  req.rawHeaders = raw;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase();
    req.headers[name] ??= raw[i + 1]!;
  }
  return req;
}

describe("raw header reads", () => {
  const raw = ["Host", "a.example", "X-Refusal", "one", "HOST", "b.example", "x-refusal", "two", "X-Refusals", "no"];

  it("the first value of a field in any case, undefined when absent", () => {
    expect(firstRawHeader(raw, "host")).toBe("a.example");
    expect(firstRawHeader(raw, "x-refusals")).toBe("no");
    expect(firstRawHeader(raw, "absent")).toBeUndefined();
    expect(firstRawHeader([], "host")).toBeUndefined();
    // A name with no value after it (an odd list) is not read past the end.
    expect(firstRawHeader(["Host"], "host")).toBeUndefined();
    expect(firstRawHeader(["Host", ""], "host")).toBe("");
    // A name of the same length is another field.
    expect(firstRawHeader(["Hast", "x", "HOST", "y"], "host")).toBe("y");
    expect(joinedRawHeader(["Hast", "x", "host", "y"], "host")).toBe("y");
  });

  it("every value of a field joined with a comma and space, exact names only, empty when absent", () => {
    expect(joinedRawHeader(raw, "x-refusal")).toBe("one, two");
    expect(joinedRawHeader(raw, "x-refusals")).toBe("no");
    expect(joinedRawHeader(raw, "x-refusa")).toBe("");
    expect(joinedRawHeader(["A", "1", "a"], "a")).toBe("1");
    expect(joinedRawHeader(["A", "", "a", "2"], "a")).toBe(", 2");
  });
});

describe("the WebSocket handshake", () => {
  const KEY = "dGhlIHNhbXBsZSBub25jZQ==";
  const handshake = (extra: string[] = [], method = "GET", key = KEY, version = "13") =>
    request(method, [
      "Connection",
      "Upgrade",
      "Upgrade",
      "websocket",
      "Sec-WebSocket-Key",
      key,
      "Sec-WebSocket-Version",
      version,
      ...extra,
    ]);

  it("is a WebSocket request by Connection: upgrade and Upgrade: websocket", () => {
    expect(isWebSocketRequest(handshake())).toBe(true);
    expect(isWebSocketRequest(request("GET", ["Connection", "Upgrade", "Upgrade", "h2c"]))).toBe(false);
  });

  it("is well formed with GET, a 16-byte base64 key and version 13 or 8", () => {
    expect(isWellFormedHandshake(handshake())).toBe(true);
    expect(isWellFormedHandshake(handshake([], "GET", KEY, "8"))).toBe(true);
    expect(isWellFormedHandshake(handshake([], "POST"))).toBe(false);
    expect(isWellFormedHandshake(handshake([], "GET", KEY, "12"))).toBe(false);
    expect(isWellFormedHandshake(handshake([], "GET", `${"+/09AZaz".padEnd(22, "A")}==`))).toBe(true);
    for (const key of [
      "dGhlIHNhbXBsZSBub25jZQ=",
      "dGhlIHNhbXBsZSBub25jZQ===",
      "xdGhlIHNhbXBsZSBub25jZQ==",
      "dGhlIHNhbXBsZSBub25j-Q==",
      `${KEY} `,
      ` ${KEY}`,
    ])
      expect(isWellFormedHandshake(handshake([], "GET", key)), key).toBe(false);
    expect(isWellFormedHandshake(request("GET", ["Sec-WebSocket-Version", "13"]))).toBe(false);
    expect(isWellFormedHandshake(handshake(["Sec-WebSocket-Protocol", "a,,b"]))).toBe(false);
  });

  it("asks for the subprotocols in order, trimmed; none without the header; null when malformed", () => {
    expect(requestedProtocols(handshake())).toEqual([]);
    expect(requestedProtocols(handshake(["Sec-WebSocket-Protocol", "chat, v2.json ,x~y"]))).toEqual([
      "chat",
      "v2.json",
      "x~y",
    ]);
    expect(requestedProtocols(handshake(["Sec-WebSocket-Protocol", "!#$%&'*+-.^_`|~09AZaz"]))).toEqual([
      "!#$%&'*+-.^_`|~09AZaz",
    ]);
    for (const header of ["", "a,", "a b", "a,a", "chat, chat", "a/b", "(x)", "é"])
      expect(requestedProtocols(handshake(["Sec-WebSocket-Protocol", header])), header).toBeNull();
  });
});

describe("OriginCache", () => {
  it("gives origin, the path without its trailing slash, and the Host of a forward", () => {
    const origins = new OriginCache();
    expect(origins.of("http://w.example:8080/base/")).toEqual({
      origin: "http://w.example:8080",
      path: "/base",
      hostHeader: "w.example:8080",
    });
    expect(origins.of("https://w.example:443")).toEqual({
      origin: "https://w.example",
      path: "",
      hostHeader: "w.example",
    });
    expect(origins.of("http://[::1]:9000/a/b")).toEqual({
      origin: "http://[::1]:9000",
      path: "/a/b",
      hostHeader: "[::1]:9000",
    });
  });

  it("parses each URL once, and starts again past 10000 distinct ones", () => {
    const origins = new OriginCache();
    const first = origins.of("http://w0.example");
    expect(origins.of("http://w0.example")).toBe(first);
    for (let i = 1; i < 10_000; i++) origins.of(`http://w${i}.example`);
    expect(origins.of("http://w0.example")).toBe(first); // 10000 held: still the same one
    origins.of("http://w10000.example"); // the 10001st clears the cache first
    expect(origins.of("http://w0.example")).not.toBe(first);
    expect(origins.of("http://w0.example")).toEqual(first);
  });
});
