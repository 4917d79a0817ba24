import { describe, expect, it } from "vitest";
import {
  carriesBody,
  FRAMING_HEADERS,
  framingRefused,
  NO_BODY,
  type RequestFraming,
  requestFraming,
} from "../../src/data-plane/framing.ts";
import { RawHeaderSource } from "../../src/data-plane/inbound.ts";
import { answerOf } from "../../src/errors/pinboard-error.ts";

/**
 * How a request's body is delimited (RFC 9112 §6), decided from its headers alone: the rules of
 * src/data-plane/framing.ts with their exact refusal reasons. framing-differential.test.ts writes
 * a corpus of framings byte for byte through both entries.
 */

/** The framing of a request with these header lines (repeats joined as node:http and Headers join them). */
const framingOf = (method: string, lines: string[], streamed = false): RequestFraming =>
  requestFraming(method, new RawHeaderSource(lines), streamed);
const refused = (reason: string): RequestFraming => ({ kind: "refused", reason });

describe("requestFraming", () => {
  it("no framing header: no body, unless the runtime holds a body stream (then chunked)", () => {
    expect(framingOf("POST", [])).toEqual({ kind: "none" });
    expect(framingOf("POST", [], true)).toEqual({ kind: "chunked" });
    expect(framingOf("GET", [])).toBe(NO_BODY);
  });

  it("Content-Length: one decimal number of up to 15 digits, surrounding whitespace allowed", () => {
    expect(framingOf("POST", ["Content-Length", "5"])).toEqual({ kind: "length", length: 5 });
    expect(framingOf("PUT", ["content-length", " 0012 "])).toEqual({ kind: "length", length: 12 });
    expect(framingOf("POST", ["Content-Length", "999999999999999"])).toEqual({
      kind: "length",
      length: 999_999_999_999_999,
    });
    expect(framingOf("POST", ["Content-Length", "5"], true)).toEqual({ kind: "length", length: 5 });
  });

  it("refuses a Content-Length that is not one decimal number, a repeated one included", () => {
    for (const value of ["", "-1", "+5", "5.0", "0x10", "1e3", "5 5", "1000000000000000", "٣"]) {
      expect(framingOf("POST", ["Content-Length", value])).toEqual(refused("invalid Content-Length"));
    }
    expect(framingOf("POST", ["Content-Length", "5", "Content-Length", "5"])).toEqual(
      refused("invalid Content-Length"),
    );
  });

  it("Transfer-Encoding: exactly chunked, in any case and with surrounding whitespace", () => {
    expect(framingOf("POST", ["Transfer-Encoding", "chunked"])).toEqual({ kind: "chunked" });
    expect(framingOf("POST", ["transfer-encoding", " CHUNKED "])).toEqual({ kind: "chunked" });
  });

  it("refuses any other transfer coding, a list, and a repeated Transfer-Encoding", () => {
    for (const value of ["gzip", "gzip, chunked", "chunked, chunked", "identity", "chunked;x=1", ""]) {
      expect(framingOf("POST", ["Transfer-Encoding", value])).toEqual(refused("Transfer-Encoding other than chunked"));
    }
    expect(framingOf("POST", ["Transfer-Encoding", "chunked", "Transfer-Encoding", "chunked"])).toEqual(
      refused("Transfer-Encoding other than chunked"),
    );
  });

  it("refuses Transfer-Encoding together with Content-Length, whatever their values", () => {
    const both = refused("both Content-Length and Transfer-Encoding");
    expect(framingOf("POST", ["Transfer-Encoding", "chunked", "Content-Length", "5"])).toEqual(both);
    expect(framingOf("POST", ["Content-Length", "0", "Transfer-Encoding", "chunked"])).toEqual(both);
    expect(framingOf("POST", ["Content-Length", "x", "Transfer-Encoding", "gzip"])).toEqual(both);
  });

  it("refuses a body on GET and HEAD, and lets them declare Content-Length: 0", () => {
    expect(framingOf("GET", ["Content-Length", "1"])).toEqual(refused("GET with a body"));
    expect(framingOf("HEAD", ["Transfer-Encoding", "chunked"])).toEqual(refused("HEAD with a body"));
    expect(framingOf("GET", [], true)).toEqual(refused("GET with a body"));
    expect(framingOf("GET", ["Content-Length", "0"])).toEqual({ kind: "length", length: 0 });
    expect(framingOf("HEAD", ["Content-Length", "0"])).toEqual({ kind: "length", length: 0 });
    expect(framingOf("DELETE", ["Content-Length", "3"])).toEqual({ kind: "length", length: 3 });
    expect(framingOf("OPTIONS", ["Transfer-Encoding", "chunked"])).toEqual({ kind: "chunked" });
  });

  it("reads Headers the same way (Fetch API requests on the Workers entry)", () => {
    const headers = new Headers([
      ["content-length", "5"],
      ["content-length", "5"],
    ]);
    expect(requestFraming("POST", headers)).toEqual(refused("invalid Content-Length"));
    expect(requestFraming("POST", new Headers({ "content-length": "7" }))).toEqual({ kind: "length", length: 7 });
  });
});

describe("carriesBody", () => {
  it("is true for chunked and a positive length, false for no body, length 0 and a refusal", () => {
    expect(carriesBody({ kind: "chunked" })).toBe(true);
    expect(carriesBody({ kind: "length", length: 1 })).toBe(true);
    expect(carriesBody({ kind: "length", length: 0 })).toBe(false);
    expect(carriesBody(NO_BODY)).toBe(false);
    expect(carriesBody(refused("x"))).toBe(false);
  });
});

describe("framingRefused", () => {
  it("answers 400 with the reason and closes the connection", () => {
    expect(answerOf(framingRefused("invalid Content-Length"))).toEqual({
      status: 400,
      headers: { connection: "close", "content-type": "application/json" },
      body: '{"error":"request framing refused: invalid Content-Length"}',
    });
  });
});

describe("FRAMING_HEADERS", () => {
  it("are exactly the two headers only a transport writes", () => {
    expect([...FRAMING_HEADERS].sort()).toEqual(["content-length", "transfer-encoding"]);
  });
});
