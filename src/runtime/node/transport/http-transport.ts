import type { IncomingMessage, ServerResponse } from "node:http";
import type { Readable } from "node:stream";
import { Agent, type Dispatcher } from "undici";
import type { ClientLink } from "../../../data-plane/inbound.ts";
import type { Delivery, Forward, Transport } from "../../../data-plane/transport.ts";
import type { Answer } from "../../../errors/pinboard-error.ts";
import { DeadlineTimer } from "./deadline-timer.ts";
import { ForwardExchange } from "./forward-exchange.ts";
import { OriginCache } from "./origins.ts";

/**
 * How long a pooled connection may sit idle when the worker names no Keep-Alive timeout; with one,
 * undici closes the connection a second before the worker's hint, so an idle socket is dropped
 * before the worker drops it.
 */
const IDLE_SOCKET_MS = 4_000;
/** RFC 9110 §9.2.2: what a client may send again on its own when a connection fails under it. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
/**
 * How many times a body-less idempotent request goes again after its pooled connection failed
 * under it. Each failure drops that connection from the pool, and a worker that closed its idle
 * connections while Pinboard's event loop was stalled may have closed several at once.
 */
const MAX_STALE_RETRIES = 4;

/**
 * The data plane's HTTP transport on the Node entry: the forward goes to the owner through an
 * undici Agent (one keep-alive pool per worker origin, redirects never followed, content-encoding
 * untouched), the client's `IncomingMessage` streamed as its body, and the worker's answer written
 * to the client's `ServerResponse` as it arrives (ForwardExchange), with both sides' backpressure.
 * No web Request, Response or ReadableStream on the way. undici's HTTP/1.1 client costs less per
 * forward than node:http's Agent and ClientRequest (docs/performance.md).
 */
export class NodeHttpTransport {
  private readonly agent = new Agent({
    keepAliveTimeout: IDLE_SOCKET_MS,
    keepAliveTimeoutThreshold: 1_000,
    // The forward's own deadline covers the head (ForwardExchange); a body may take as long as it needs.
    headersTimeout: 0,
    bodyTimeout: 0,
  });
  private readonly origins = new OriginCache();
  /** Per tick length: a forward times out up to a tenth of its timeout late, at most 250 ms. */
  private readonly sweeps = new Map<number, DeadlineTimer<ForwardExchange>>();

  constructor(private readonly onBackgroundError: (err: unknown) => void) {}

  /** The transport of one client request. */
  for(req: IncomingMessage, res: ServerResponse, client: ClientLink): Transport<void> {
    return {
      defer: (work) => void work.catch(this.onBackgroundError),
      reply: (answer) => writeAnswer(req, res, answer),
      send: (forward, release) => this.send(req, res, client, forward, release),
    };
  }

  /** Closes pooled connections to workers (shutdown). */
  close(): void {
    void this.agent.destroy().catch(this.onBackgroundError);
  }

  private send(
    req: IncomingMessage,
    res: ServerResponse,
    client: ClientLink,
    forward: Forward,
    release: () => void,
  ): Promise<Delivery<void>> {
    const origin = this.origins.of(forward.advertiseUrl);
    const options: Dispatcher.DispatchOptions = {
      origin: origin.origin,
      path: `${origin.path}${forward.pathAndQuery}`,
      method: forward.method as Dispatcher.HttpMethod,
      headers: headerLines(forward, origin.hostHeader),
      body: forward.withBody ? bodyOf(req, forward) : null,
      // A HEAD keeps its pooled connection, as with any other method (undici closes it by default,
      // against servers that send a body to a HEAD; llhttp reads no body after a HEAD's head).
      ...(forward.method === "HEAD" ? { reset: false } : {}),
    };
    return new Promise<Delivery<void>>((resolve) => {
      let retries = 0;
      const exchange = new ForwardExchange(
        res,
        forward,
        client,
        forward.withBody ? req : null,
        this.sweepFor(forward.timeoutMs),
        release,
        resolve,
        (err) => {
          // A pooled connection the worker closed while it sat idle (the two sides' timers raced, or
          // an event-loop stall hid the close): the worker never took the request, so it goes again.
          if (retries >= MAX_STALE_RETRIES || !isStaleFailure(err, forward)) return false;
          retries++;
          exchange.connected = false;
          if (forward.reattested === undefined) {
            this.agent.dispatch(options, exchange);
            return true;
          }
          // Signed anew: a worker accepts each attestation once (the Node signer is synchronous, so
          // this settles in the same turn).
          forward.reattested().then(
            (headers) =>
              this.agent.dispatch(
                { ...options, headers: headerLines({ ...forward, headers }, origin.hostHeader) },
                exchange,
              ),
            (failure: unknown) => exchange.onError(failure instanceof Error ? failure : new Error(String(failure))),
          );
          return true;
        },
      );
      if (exchange.arm()) this.agent.dispatch(options, exchange);
    });
  }

  private sweepFor(timeoutMs: number): DeadlineTimer<ForwardExchange> {
    const tick = Math.min(250, Math.max(1, Math.floor(timeoutMs / 10)));
    let sweep = this.sweeps.get(tick);
    if (!sweep) this.sweeps.set(tick, (sweep = new DeadlineTimer<ForwardExchange>(tick)));
    return sweep;
  }
}

/**
 * The forward's headers as a flat [name, value, …] list (undici validates and writes them in one
 * pass), then its Content-Length, Host last. A chunked body goes without a length: undici frames a
 * streamed body of unknown length chunked itself. A Content-Length of 0 on a method that expects
 * no body is left out by undici (RFC 9110 §8.6).
 */
function headerLines(forward: Forward, host: string): string[] {
  const { headers, framing } = forward;
  const lines: string[] = [];
  for (const name in headers) lines.push(name, headers[name]!);
  if (framing.kind === "length" && (forward.withBody || framing.length === 0))
    lines.push("content-length", String(framing.length));
  lines.push("host", host);
  return lines;
}

/**
 * The client's body as undici sends it. A chunked one goes as an iterable of unknown length, which
 * undici always frames chunked: given the stream itself, undici reads a stream that has already
 * ended (the whole body arrived with the head) as a body of known length and would send it with a
 * Content-Length, or with no framing at all when it is empty, not the framing the client gave.
 */
function bodyOf(req: IncomingMessage, forward: Forward): Dispatcher.DispatchOptions["body"] {
  if (forward.framing.kind !== "chunked") return req;
  const chunks: AsyncIterable<Buffer> = { [Symbol.asyncIterator]: () => req[Symbol.asyncIterator]() };
  // Dispatcher.md documents an AsyncIterable body; the type declarations leave it out.
  return chunks as unknown as Readable;
}

/**
 * A pooled connection that failed under a request the worker cannot have answered, and that a
 * client may send again on its own: the request goes again on another connection. undici names a
 * connection the worker closed "other side closed" (UND_ERR_SOCKET) with the connection's byte
 * counts: it was a pooled one when it had carried an earlier answer. A reset or a broken pipe
 * under the write carries no counts and goes again too, within MAX_STALE_RETRIES.
 */
function isStaleFailure(err: Error, forward: Forward): boolean {
  if (forward.withBody || !IDEMPOTENT.has(forward.method)) return false;
  const { code, socket } = err as NodeJS.ErrnoException & { socket?: { bytesRead?: number } };
  if (code === "UND_ERR_SOCKET") return (socket?.bytesRead ?? 0) > 0;
  return code === "ECONNRESET" || code === "EPIPE";
}

/**
 * Writes one of Pinboard's own answers; once the worker's head is out, only a cut is left. An
 * upload not read to its end (refused before the forward, or the worker gone mid-upload) closes
 * the connection after the answer: its remaining bytes would otherwise hold the keep-alive
 * connection's parser until the idle timeout.
 */
export function writeAnswer(req: IncomingMessage, res: ServerResponse, answer: Answer): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  if (!req.complete) res.shouldKeepAlive = false;
  const body = answer.body === null ? null : Buffer.from(answer.body, "utf8");
  res.writeHead(answer.status, { ...answer.headers, "content-length": String(body?.byteLength ?? 0) });
  res.end(body ?? undefined);
}
