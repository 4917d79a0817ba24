/**
 * The differential framing suite's corpus: requests written byte for byte, each with what must
 * come of it. Every body that carries bytes carries a whole smuggled request too, so a body that
 * reached a worker unframed would show up as a request the client never made.
 */

export const NS = "/fr";
export const SMUGGLED = `GET ${NS}/smuggled-1 HTTP/1.1\r\nHost: x\r\n\r\n`;

export type Expect =
  /** Forwarded with exactly this body and answered with `status` (and `answer` as its body, where given). */
  | { forwarded: string; status: number; answer?: string }
  /** Refused by Pinboard with 400 and this reason (see CaseRequest.expect). */
  | { refused: string | string[] }
  /** Answered with `status` without reaching the worker (a 502 for an answer the runtime could not read). */
  | { answered: number }
  /** Refused by the runtime's own HTTP parser before Pinboard runs (workerd: 500 "Internal Server Error"). */
  | { runtimeRefused: true };

/** One request on the client's connection and what must come of it. */
export interface CaseRequest {
  method: string;
  /** The id's scenario (see framing-worker.ts); the suite makes it unique per case and entry. */
  scenario: string;
  /** Header lines after Host, as sent. */
  headers: string[];
  /** The bytes after the head, exactly as sent (already chunked where the headers say so). */
  wire: string;
  /**
   * Forwarded with exactly this body, and answered with `status`; or refused with 400 and this
   * reason (one of these, where a request has two faults and which is named first depends on the
   * order a parser reads the headers in).
   */
  expect: Expect;
  /**
   * What the Workers entry does instead, where workerd (local) differs: its own HTTP parser
   * answers some framings itself before the Worker runs, and its fetch handles some answers its
   * own way. Production Workers sit behind Cloudflare's edge, which parses first.
   */
  onWorkers?: Expect;
  /** The request line's version (HTTP/1.1 unless said). */
  version?: string;
}

export interface FramingCase {
  name: string;
  requests: CaseRequest[];
  /** Sent in two writes, the body after a pause (Expect: 100-continue). */
  pauseBeforeBody?: boolean;
  /** Header names the worker must see (lower-case) on the first request, with their values where given. */
  workerSees?: Record<string, string | true>;
  /** On the Workers entry, what workerd itself writes after the answers (its parser's extra answer). */
  workersTrailing?: string;
  /** Header names the client must not see on the first answer (lower-case). */
  clientNeverSees?: string[];
}

export const chunked = (...parts: string[]): string =>
  `${parts.map((p) => `${Buffer.byteLength(p).toString(16)}\r\n${p}\r\n`).join("")}0\r\n\r\n`;
const len = (body: string): string => `Content-Length: ${Buffer.byteLength(body)}`;
const BODY = `hello${SMUGGLED}`;
const BOTH = ["both Content-Length and Transfer-Encoding", "Transfer-Encoding other than chunked"];

const ok = (method: string, headers: string[] = [], wire = ""): CaseRequest => ({
  method,
  scenario: "echo",
  headers,
  wire,
  expect: { forwarded: method === "HEAD" ? "" : bodyOf(headers, wire), status: 200 },
});
const refused = (method: string, reason: string | string[], headers: string[], wire = ""): CaseRequest => ({
  method,
  scenario: "echo",
  headers,
  wire,
  expect: { refused: reason },
});
const answer = (scenario: string, status: number, body?: string, method = "GET"): CaseRequest => ({
  method,
  scenario,
  headers: [],
  wire: "",
  expect: { forwarded: "", status, ...(body === undefined ? {} : { answer: body }) },
});
const onWorkers = (request: CaseRequest, expect: Expect): CaseRequest => ({ ...request, onWorkers: expect });
const RUNTIME = { runtimeRefused: true } as const;
/**
 * Reached the worker, but workerd's fetch could not read the answer: bytes a worker left after a
 * bodiless answer are read as the next answer on that pooled connection, and an informational
 * 103 is taken for the final answer. Pinboard answers 502; the 103 is not held against the worker.
 */
const UNREAD = { forwarded: "", status: 502, answer: "bad gateway" } as const;

/** The body bytes a well-framed request carries: the wire itself, or its chunks joined. */
function bodyOf(headers: string[], wire: string): string {
  if (!headers.some((h) => /^transfer-encoding:/i.test(h))) return wire;
  let out = "";
  let rest = wire;
  for (;;) {
    const eol = rest.indexOf("\r\n");
    const size = parseInt(rest.slice(0, eol).split(";")[0]!, 16);
    if (size === 0) return out;
    out += rest.slice(eol + 2, eol + 2 + size);
    rest = rest.slice(eol + 2 + size + 2);
  }
}

const WITH_BODY_METHODS = ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"];
const ALL_METHODS = ["GET", "HEAD", ...WITH_BODY_METHODS];

export const CORPUS: FramingCase[] = [
  // Every method without a body, and with one framed each way.
  ...ALL_METHODS.map((m) => ({ name: `${m} without a body`, requests: [ok(m)] })),
  ...WITH_BODY_METHODS.map((m) => ({ name: `${m} with Content-Length`, requests: [ok(m, [len(BODY)], BODY)] })),
  ...WITH_BODY_METHODS.map((m) => ({
    name: `${m} chunked`,
    requests: [ok(m, ["Transfer-Encoding: chunked"], chunked("hel", `lo${SMUGGLED}`))],
  })),
  { name: "POST with Content-Length: 0", requests: [ok("POST", ["Content-Length: 0"])] },
  { name: "GET with Content-Length: 0", requests: [ok("GET", ["Content-Length: 0"])] },
  { name: "GET with a Content-Length body", requests: [refused("GET", "GET with a body", [len(BODY)], BODY)] },
  { name: "HEAD with a Content-Length body", requests: [refused("HEAD", "HEAD with a body", [len(BODY)], BODY)] },
  { name: "GET chunked", requests: [refused("GET", "GET with a body", ["Transfer-Encoding: chunked"], chunked(BODY))] },
  // Chunked variants a parser could read two ways.
  // workerd (local) hands the Worker an empty body for a chunked request with extensions, and reads
  // a trailer section as a request of its own (answering it 501): its parser, not Pinboard's, and
  // pinned here so that a change in the runtime shows (docs/data-plane.md, "Framing").
  {
    name: "chunk extensions",
    requests: [
      onWorkers(
        ok(
          "POST",
          ["Transfer-Encoding: chunked"],
          `5;ext=1\r\nhello\r\n${Buffer.byteLength(SMUGGLED).toString(16)};a="b"\r\n${SMUGGLED}\r\n0\r\n\r\n`,
        ),
        { forwarded: "", status: 200 },
      ),
    ],
  },
  {
    name: "trailers",
    requests: [
      ok(
        "POST",
        ["Transfer-Encoding: chunked"],
        `5\r\nhello\r\n${Buffer.byteLength(SMUGGLED).toString(16)}\r\n${SMUGGLED}\r\n0\r\nX-Trailer: t\r\n\r\n`,
      ),
    ],
    workersTrailing: "HTTP/1.1 501 Not Implemented\r\n",
  },
  { name: "Transfer-Encoding: CHUNKED", requests: [ok("POST", ["Transfer-Encoding: CHUNKED"], chunked(BODY))] },
  {
    name: "Transfer-Encoding with surrounding whitespace",
    requests: [onWorkers(ok("POST", ["Transfer-Encoding:  chunked "], chunked(BODY)), RUNTIME)],
  },
  {
    name: "Transfer-Encoding: gzip, chunked",
    requests: [
      onWorkers(
        refused("POST", "Transfer-Encoding other than chunked", ["Transfer-Encoding: gzip, chunked"], chunked(BODY)),
        RUNTIME,
      ),
    ],
  },
  {
    name: "Transfer-Encoding: chunked, chunked",
    requests: [
      refused("POST", "Transfer-Encoding other than chunked", ["Transfer-Encoding: chunked, chunked"], chunked(BODY)),
    ],
  },
  {
    name: "two Transfer-Encoding: chunked fields",
    requests: [
      refused(
        "POST",
        "Transfer-Encoding other than chunked",
        ["Transfer-Encoding: chunked", "Transfer-Encoding: chunked"],
        chunked(BODY),
      ),
    ],
  },
  {
    name: "Transfer-Encoding: identity, with Content-Length",
    requests: [onWorkers(refused("POST", BOTH, ["Transfer-Encoding: identity", len(BODY)], BODY), RUNTIME)],
  },
  {
    name: "Transfer-Encoding: identity",
    requests: [
      onWorkers(
        refused("POST", "Transfer-Encoding other than chunked", ["Transfer-Encoding: identity"], BODY),
        RUNTIME,
      ),
    ],
  },
  {
    name: "Transfer-Encoding and Content-Length",
    requests: [
      refused(
        "POST",
        "both Content-Length and Transfer-Encoding",
        ["Transfer-Encoding: chunked", len(BODY)],
        chunked(BODY),
      ),
    ],
  },
  {
    name: "Content-Length and Transfer-Encoding (other order)",
    requests: [refused("PUT", BOTH, ["Content-Length: 4", "Transfer-Encoding: chunked"], chunked(BODY))],
  },
  {
    name: "a chunk size that is not hex",
    // node:http stops at the bad size: 400 bad request, the forward already under way cut with the
    // connection. workerd (local) ends the body there instead and the Worker forwards what came.
    requests: [
      onWorkers(
        {
          method: "POST",
          scenario: "echo",
          headers: ["Transfer-Encoding: chunked"],
          wire: `5\r\nhello\r\nzz\r\n${SMUGGLED}\r\n0\r\n\r\n`,
          expect: { answered: 400 },
        },
        { forwarded: "hello", status: 200 },
      ),
    ],
  },
  // Content-Length variants.
  {
    name: "two equal Content-Length fields",
    requests: [onWorkers(refused("POST", "invalid Content-Length", [len(BODY), len(BODY)], BODY), RUNTIME)],
  },
  {
    name: "two different Content-Length fields",
    requests: [onWorkers(refused("POST", "invalid Content-Length", ["Content-Length: 5", len(BODY)], BODY), RUNTIME)],
  },
  {
    name: "Content-Length as a list",
    requests: [
      onWorkers(
        refused(
          "POST",
          "invalid Content-Length",
          [`Content-Length: ${Buffer.byteLength(BODY)}, ${Buffer.byteLength(BODY)}`],
          BODY,
        ),
        RUNTIME,
      ),
    ],
  },
  {
    name: "Content-Length with a sign",
    requests: [
      onWorkers(
        refused("POST", "invalid Content-Length", [`Content-Length: +${Buffer.byteLength(BODY)}`], BODY),
        RUNTIME,
      ),
    ],
  },
  {
    name: "Content-Length in hex",
    requests: [onWorkers(refused("POST", "invalid Content-Length", ["Content-Length: 0x5"], BODY), RUNTIME)],
  },
  {
    name: "Content-Length with leading whitespace",
    requests: [ok("POST", [`Content-Length:   ${Buffer.byteLength(BODY)}`], BODY)],
  },
  // Connection naming the framing, Host and Pinboard's own headers.
  {
    name: "GET with Connection: content-length, close and a body",
    requests: [refused("GET", "GET with a body", ["Connection: content-length, close", len(BODY)], BODY)],
  },
  {
    name: "POST with Connection: content-length",
    requests: [ok("POST", ["Connection: content-length", len(BODY)], BODY)],
    workerSees: { "content-length": String(Buffer.byteLength(BODY)) },
  },
  {
    name: "DELETE chunked with Connection: transfer-encoding",
    requests: [ok("DELETE", ["Connection: transfer-encoding", "Transfer-Encoding: chunked"], chunked(BODY))],
    workerSees: { "transfer-encoding": "chunked" },
  },
  { name: "Connection: host", requests: [ok("GET", ["Connection: host"])], workerSees: { host: true } },
  {
    name: "Connection naming Pinboard's headers",
    requests: [ok("GET", ["Connection: pinboard-epoch, pinboard-attestation, x-forwarded-for, x-forwarded-proto"])],
    workerSees: {
      "pinboard-epoch": true,
      "pinboard-attestation": true,
      "x-forwarded-for": true,
      "x-forwarded-proto": true,
    },
  },
  // Pipelined requests on one client connection.
  { name: "two GETs pipelined", requests: [ok("GET"), ok("GET")] },
  { name: "POST with Content-Length, then GET", requests: [ok("POST", [len(BODY)], BODY), ok("GET")] },
  {
    name: "PATCH chunked, then DELETE with Content-Length, then HEAD",
    requests: [ok("PATCH", ["Transfer-Encoding: chunked"], chunked(BODY)), ok("DELETE", [len(BODY)], BODY), ok("HEAD")],
  },
  {
    name: "the reported smuggle: DELETE chunked carrying a request, then GET",
    requests: [ok("DELETE", ["Transfer-Encoding: chunked"], chunked(SMUGGLED)), ok("GET")],
  },
  {
    name: "a good request, then a refused one",
    requests: [
      ok("GET"),
      refused(
        "POST",
        "both Content-Length and Transfer-Encoding",
        ["Transfer-Encoding: chunked", "Content-Length: 3"],
        chunked(BODY),
      ),
    ],
  },
  // Expect: 100-continue.
  {
    name: "Expect: 100-continue",
    pauseBeforeBody: true,
    requests: [ok("PUT", ["Expect: 100-continue", len(BODY)], BODY)],
  },
  // The worker's answers.
  {
    name: "a 204 with a body, then a GET on the same worker",
    requests: [answer("body204", 204, ""), onWorkers(ok("GET"), UNREAD)],
    clientNeverSees: ["content-length"],
  },
  { name: "a 304 with a body, then a GET", requests: [answer("body304", 304, ""), onWorkers(ok("GET"), UNREAD)] },
  {
    name: "a HEAD answered with a body, then a GET",
    requests: [answer("headbody", 200, "", "HEAD"), onWorkers(ok("GET"), UNREAD)],
  },
  {
    name: "an answer with Content-Length and Transfer-Encoding",
    requests: [
      onWorkers(answer("clte", 502, "bad gateway"), { forwarded: "", status: 200, answer: "hello" }),
      ok("GET"),
    ],
  },
  { name: "an answer with two Content-Length values", requests: [answer("dupcl", 502, "bad gateway"), ok("GET")] },
  { name: "an answer delimited by the close", requests: [answer("unframed", 200, "hello"), ok("GET")] },
  {
    name: "an answer whose Connection names Content-Length",
    requests: [answer("connlength", 200, "hello"), ok("GET")],
  },
  { name: "103 Early Hints before the answer", requests: [onWorkers(answer("hints", 200, "ok"), UNREAD), ok("GET")] },
  { name: "status 600", requests: [answer("odd600", 502, "bad gateway"), ok("GET")] },
  {
    name: "an answer carrying Service-Worker-Allowed and Pinboard's headers",
    requests: [answer("swallowed", 200, "ok")],
    clientNeverSees: ["service-worker-allowed", "pinboard-epoch", "pinned-refusal"],
  },
];
