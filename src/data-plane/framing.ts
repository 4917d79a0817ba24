import { PinboardError } from "../errors/pinboard-error.ts";
import type { HeaderSource } from "./inbound.ts";

/**
 * How a request's body is delimited (RFC 9112 §6), decided once from the client's headers and
 * carried to the transport, which frames the forward with it itself: the client's Content-Length
 * or its chunked coding, never "whatever bytes follow". A framing that cannot be forwarded
 * faithfully is refused before anything is resolved, so a body can never reach a pooled
 * connection to a worker unframed (where the worker would read it as its next request).
 */
export type RequestFraming =
  | { readonly kind: "none" }
  | { readonly kind: "length"; readonly length: number }
  | { readonly kind: "chunked" }
  /** Cannot be forwarded faithfully: the data plane answers 400 and closes the connection. */
  | { readonly kind: "refused"; readonly reason: string };

export const NO_BODY: RequestFraming = { kind: "none" };
const CHUNKED: RequestFraming = { kind: "chunked" };

/** The framing headers: only a transport writes them, from the RequestFraming. */
export const FRAMING_HEADERS: ReadonlySet<string> = new Set(["content-length", "transfer-encoding"]);

/** Methods whose body the Fetch API cannot carry (the Workers entry's limit), refused on both entries alike. */
const BODILESS_METHODS = new Set(["GET", "HEAD"]);
/** Up to 2^53 - 1: a length JavaScript counts exactly. */
const DECIMAL_LENGTH = /^[0-9]{1,15}$/;

/** The answer to a request whose framing is refused; the connection is closed after it. */
export function framingRefused(reason: string): PinboardError {
  return new PinboardError(400, { error: `request framing refused: ${reason}` }, { connection: "close" });
}

const refused = (reason: string): RequestFraming => ({ kind: "refused", reason });

/**
 * The framing of a request as its headers declare it; `streamed` says the runtime holds a body
 * stream whatever the headers say (a Fetch API request that came over HTTP/2 has neither
 * Content-Length nor Transfer-Encoding), which the transport then sends chunked. Header values arrive joined as Headers
 * joins repeats (", "), so a repeated Content-Length or Transfer-Encoding shows as a list and is
 * refused like any other list.
 *
 * - Transfer-Encoding must be exactly `chunked`: another coding would have to be decoded or
 *   passed on, and a list is how a second parser is made to disagree with the first.
 * - Transfer-Encoding with Content-Length is refused (RFC 9112 §6.1 lets a proxy reject it).
 * - Content-Length must be one decimal number.
 * - GET and HEAD carry no body: fetch cannot send one, and their semantics give it none.
 */
export function requestFraming(method: string, headers: HeaderSource, streamed = false): RequestFraming {
  const transferEncoding = headers.get("transfer-encoding");
  const contentLength = headers.get("content-length");
  let framing: RequestFraming;
  if (transferEncoding !== null) {
    if (contentLength !== null) return refused("both Content-Length and Transfer-Encoding");
    if (transferEncoding.trim().toLowerCase() !== "chunked") return refused("Transfer-Encoding other than chunked");
    framing = CHUNKED;
  } else if (contentLength !== null) {
    const digits = contentLength.trim();
    if (!DECIMAL_LENGTH.test(digits)) return refused("invalid Content-Length");
    framing = { kind: "length", length: Number(digits) };
  } else {
    framing = streamed ? CHUNKED : NO_BODY;
  }
  if (carriesBody(framing) && BODILESS_METHODS.has(method)) return refused(`${method} with a body`);
  return framing;
}

/** Whether bytes follow the head (a declared `Content-Length: 0` is framing without a body). */
export const carriesBody = (framing: RequestFraming): boolean =>
  framing.kind === "chunked" || (framing.kind === "length" && framing.length > 0);
