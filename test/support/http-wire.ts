import { connect } from "node:net";

/**
 * HTTP/1.1 messages read off raw bytes by a strict parser of the test's own, independent of
 * node:http and workerd: it accepts exactly one reading of the bytes or calls them invalid, so a
 * message two parsers could read differently never passes as a good one.
 */

export interface ParsedRequest {
  method: string;
  target: string;
  /** Header lines as sent, in order, the name's case kept. */
  headers: Array<[string, string]>;
  body: Buffer;
  /** The body came chunked (otherwise with Content-Length, or no body at all). */
  chunked: boolean;
}

export type ParsedRequestBytes =
  | { kind: "incomplete" }
  | { kind: "invalid"; reason: string }
  | { kind: "message"; request: ParsedRequest; consumed: number };

const TOKEN_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+):[ \t]*(.*?)[ \t]*$/;
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) (\S+) HTTP\/1\.1$/;
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})(?: .*)?$/;
const CRLF = Buffer.from("\r\n");
const HEAD_END = Buffer.from("\r\n\r\n");

interface Head {
  first: string;
  headers: Array<[string, string]>;
  end: number;
}

function readHead(data: Buffer, from: number): Head | "incomplete" | string {
  const end = data.indexOf(HEAD_END, from);
  if (end < 0) return data.length - from > 65_536 ? "head over 64 KiB" : "incomplete";
  const lines = data.subarray(from, end).toString("latin1").split("\r\n");
  const headers: Array<[string, string]> = [];
  for (const line of lines.slice(1)) {
    const match = TOKEN_LINE.exec(line);
    if (!match) return `bad header line ${JSON.stringify(line)}`;
    headers.push([match[1]!, match[2]!]);
  }
  return { first: lines[0]!, headers, end: end + 4 };
}

const values = (headers: Array<[string, string]>, name: string): string[] =>
  headers.filter(([n]) => n.toLowerCase() === name).map(([, v]) => v);

/** A chunked body from `at`: its bytes and where it ended, strictly (hex sizes, CRLFs, trailers). */
function readChunked(data: Buffer, at: number): { body: Buffer; end: number } | "incomplete" | string {
  const parts: Buffer[] = [];
  for (;;) {
    const eol = data.indexOf(CRLF, at);
    if (eol < 0) return "incomplete";
    const sizeLine = /^([0-9a-fA-F]{1,8})(?:;[^\r\n]*)?$/.exec(data.subarray(at, eol).toString("latin1"));
    if (!sizeLine) return `bad chunk size line ${JSON.stringify(data.subarray(at, eol).toString("latin1"))}`;
    const size = parseInt(sizeLine[1]!, 16);
    at = eol + 2;
    if (size === 0) {
      for (;;) {
        const trailerEnd = data.indexOf(CRLF, at);
        if (trailerEnd < 0) return "incomplete";
        if (trailerEnd === at) return { body: Buffer.concat(parts), end: at + 2 };
        if (!TOKEN_LINE.test(data.subarray(at, trailerEnd).toString("latin1"))) return "bad trailer line";
        at = trailerEnd + 2;
      }
    }
    if (data.length < at + size + 2) return "incomplete";
    parts.push(data.subarray(at, at + size));
    if (!data.subarray(at + size, at + size + 2).equals(CRLF)) return "chunk not followed by CRLF";
    at += size + 2;
  }
}

/** How a message's body is delimited, or why that is ambiguous. */
function bodyFraming(
  headers: Array<[string, string]>,
): { kind: "chunked" } | { kind: "length"; length: number } | { kind: "none" } | string {
  const te = values(headers, "transfer-encoding");
  const cl = values(headers, "content-length");
  if (te.length > 0) {
    if (cl.length > 0) return "Content-Length with Transfer-Encoding";
    if (te.length > 1 || te[0]!.toLowerCase() !== "chunked") return `Transfer-Encoding ${JSON.stringify(te)}`;
    return { kind: "chunked" };
  }
  if (cl.length > 1) return `${cl.length} Content-Length fields`;
  if (cl.length === 1)
    return /^\d{1,15}$/.test(cl[0]!)
      ? { kind: "length", length: Number(cl[0]) }
      : `Content-Length ${JSON.stringify(cl[0])}`;
  return { kind: "none" };
}

function readBody(
  data: Buffer,
  at: number,
  framing: Exclude<ReturnType<typeof bodyFraming>, string>,
): { body: Buffer; end: number } | "incomplete" | string {
  if (framing.kind === "chunked") return readChunked(data, at);
  const length = framing.kind === "length" ? framing.length : 0;
  if (data.length < at + length) return "incomplete";
  return { body: data.subarray(at, at + length), end: at + length };
}

/** One request from the start of `data`. */
export function parseRequest(data: Buffer): ParsedRequestBytes {
  const head = readHead(data, 0);
  if (head === "incomplete") return { kind: "incomplete" };
  if (typeof head === "string") return { kind: "invalid", reason: head };
  const line = REQUEST_LINE.exec(head.first);
  if (!line) return { kind: "invalid", reason: `bad request line ${JSON.stringify(head.first)}` };
  const framing = bodyFraming(head.headers);
  if (typeof framing === "string") return { kind: "invalid", reason: framing };
  const body = readBody(data, head.end, framing);
  if (body === "incomplete") return { kind: "incomplete" };
  if (typeof body === "string") return { kind: "invalid", reason: body };
  const request = {
    method: line[1]!,
    target: line[2]!,
    headers: head.headers,
    body: body.body,
    chunked: framing.kind === "chunked",
  };
  return { kind: "message", request, consumed: body.end };
}

export interface ParsedResponse {
  status: number;
  headers: Array<[string, string]>;
  body: Buffer;
  /** Informational (1xx) statuses that came before this answer. */
  interim: number[];
}

export interface ParsedExchange {
  responses: ParsedResponse[];
  /** Bytes left after the last answer parsed, or the reason parsing stopped. */
  trailing: Buffer;
  error?: string;
}

/**
 * The answers to requests made with `methods`, in order, from everything a connection received;
 * `closed` lets the last answer be delimited by the close.
 */
export function parseResponses(data: Buffer, methods: readonly string[], closed: boolean): ParsedExchange {
  const responses: ParsedResponse[] = [];
  let at = 0;
  let interim: number[] = [];
  while (responses.length < methods.length && at < data.length) {
    const head = readHead(data, at);
    if (typeof head === "string") return { responses, trailing: data.subarray(at), error: head };
    const status = Number(STATUS_LINE.exec(head.first)?.[1] ?? NaN);
    if (!Number.isInteger(status))
      return { responses, trailing: data.subarray(at), error: `bad status line ${JSON.stringify(head.first)}` };
    if (status >= 100 && status < 200 && status !== 101) {
      interim.push(status);
      at = head.end;
      continue;
    }
    const method = methods[responses.length]!;
    const bodiless = method === "HEAD" || status === 204 || status === 304 || status === 101;
    const framing = bodiless ? { kind: "none" as const } : bodyFraming(head.headers);
    if (typeof framing === "string") return { responses, trailing: data.subarray(at), error: framing };
    let body: ReturnType<typeof readBody>;
    if (framing.kind === "none" && !bodiless)
      body = closed ? { body: data.subarray(head.end), end: data.length } : "incomplete";
    else body = readBody(data, head.end, framing);
    if (typeof body === "string") return { responses, trailing: data.subarray(at), error: body };
    responses.push({ status, headers: head.headers, body: body.body, interim });
    interim = [];
    at = body.end;
  }
  return { responses, trailing: data.subarray(at) };
}

/**
 * Writes `parts` on one new connection (a pause of `pauseMs` between parts), then reads until the
 * server closes it, every answer is in (and `graceMs` more), or `timeoutMs` passes, and parses
 * the answers to `methods`.
 */
export function rawExchange(
  url: string,
  parts: Array<string | Buffer>,
  methods: readonly string[],
  options: { pauseMs?: number; timeoutMs?: number; graceMs?: number } = {},
): Promise<ParsedExchange & { closed: boolean; raw: Buffer }> {
  const target = new URL(url);
  return new Promise((resolve) => {
    const socket = connect(Number(target.port), target.hostname);
    const chunks: Buffer[] = [];
    let closed = false;
    const finish = () => {
      clearTimeout(timer);
      clearTimeout(settle);
      socket.destroy();
      const raw = Buffer.concat(chunks);
      resolve({ ...parseResponses(raw, methods, closed), closed, raw });
    };
    const timer = setTimeout(finish, options.timeoutMs ?? 5000);
    socket.on("connect", async () => {
      for (const [i, part] of parts.entries()) {
        if (i > 0) await new Promise((r) => setTimeout(r, options.pauseMs ?? 50));
        if (!socket.destroyed) socket.write(part);
      }
    });
    let settle: NodeJS.Timeout | undefined;
    socket.on("data", (d: Buffer) => {
      chunks.push(d);
      // Every answer is in: a short grace for bytes that should not be there, then done (a server
      // may keep the connection open whatever the request asked).
      const sofar = parseResponses(Buffer.concat(chunks), methods, false);
      if (sofar.responses.length === methods.length && settle === undefined)
        settle = setTimeout(finish, options.graceMs ?? 150);
    });
    socket.on("error", () => {});
    socket.on("close", () => {
      closed = true;
      finish();
    });
  });
}
