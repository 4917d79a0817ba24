import type { ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import { framingRefused } from "../../../data-plane/framing.ts";
import { type Answer, answerOf, PinboardError } from "../../../errors/pinboard-error.ts";
import { writeRawAnswer } from "./raw-answer.ts";

/**
 * What node:http's parser refuses before Pinboard sees a request, answered as Pinboard answers
 * the same framing itself (src/data-plane/framing.ts): a client gets one reason for one fault,
 * whichever layer found it. The connection always closes after the answer: the parser cannot
 * find the next request's start in bytes it could not read.
 *
 * A complete request already in flight on the connection (an earlier pipelined one) is answered
 * first; node:http's own handler would cut it and lose its answer.
 */
export function answerClientError(err: ParserError, socket: Duplex): void {
  const refusal = clientErrorAnswer(err);
  if (refusal === null || !socket.writable) {
    socket.destroy();
    return;
  }
  const inFlight = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage;
  const answer = withoutBodyToHead(answerOf(refusal), failingMethod(err, inFlight), err.rawPacket !== undefined);
  if (!inFlight) {
    writeRawAnswer(socket, answer);
    return;
  }
  if (!inFlight.req.complete) {
    // The failing request is the one in flight (its body timed out or broke off): as node:http
    // itself does, the answer if none has begun, and the connection ends, which cuts the forward.
    if (inFlight.headersSent) socket.destroy();
    else writeRawAnswer(socket, answer);
    return;
  }
  // After the answer in flight, unless that answer closes the connection itself (Pinboard's own
  // refusal of the same request, which node:http handed over before failing).
  const afterIt = () => (inFlight.shouldKeepAlive ? writeRawAnswer(socket, answer) : socket.end());
  if (inFlight.writableFinished) afterIt();
  else inFlight.once("finish", afterIt);
  inFlight.once("close", () => socket.destroy());
}

type ParserError = NodeJS.ErrnoException & { reason?: string; rawPacket?: Buffer; bytesParsed?: number };

/** A request line: method, target, version (a header line has a colon after its first token). */
const REQUEST_LINE = /(?:^|\n)([!#$%&'*+.^_`|~0-9A-Za-z-]+) \S+ HTTP\/\d/g;

/**
 * The method of the request the parser failed on, or null when it cannot be told. A request whose
 * head was read (its body broke, or timed out) is the one in flight. Otherwise the parser failed
 * in a head: its method is that of the last request line before the failure in the bytes it was
 * reading (an earlier pipelined request's line comes before it), and unknown when the head began
 * in an earlier read (node:http keeps nothing of it).
 */
function failingMethod(err: ParserError, inFlight: ServerResponse | null | undefined): string | null {
  if (inFlight && !inFlight.req.complete) return inFlight.req.method ?? null;
  const packet = err.rawPacket?.toString("latin1") ?? "";
  const lineEnd = packet.indexOf("\n", err.bytesParsed ?? packet.length);
  let method: string | null = null;
  for (const match of packet.slice(0, lineEnd < 0 ? packet.length : lineEnd).matchAll(REQUEST_LINE)) method = match[1]!;
  return method;
}

/**
 * An answer to HEAD has no body: a body the client does not expect would be read as the next
 * answer. When the parser failed on bytes whose method cannot be told (a head split across reads),
 * none goes either: the status line still says why. A headers timeout has no bytes to read; its
 * client has not finished a head, and its answer keeps the body.
 */
function withoutBodyToHead(answer: Answer, method: string | null, fromBytes: boolean): Answer {
  return method === "HEAD" || (method === null && fromBytes) ? { ...answer, body: null } : answer;
}

/** The answer to a parser error; null for a connection that is simply gone. */
function clientErrorAnswer(err: ParserError): PinboardError | null {
  switch (err.code) {
    case "HPE_INVALID_CONTENT_LENGTH":
      return framingRefused(
        /transfer-encoding/i.test(err.reason ?? "")
          ? "both Content-Length and Transfer-Encoding"
          : "invalid Content-Length",
      );
    case "HPE_UNEXPECTED_CONTENT_LENGTH":
      return framingRefused("invalid Content-Length");
    case "HPE_INVALID_TRANSFER_ENCODING":
      return framingRefused("Transfer-Encoding other than chunked");
    case "HPE_HEADER_OVERFLOW":
      return new PinboardError(431, { error: "request header fields too large" }, { connection: "close" });
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return new PinboardError(408, { error: "request timeout" }, { connection: "close" });
    default:
      return err.code?.startsWith("HPE_")
        ? new PinboardError(400, { error: "bad request" }, { connection: "close" })
        : null;
  }
}
