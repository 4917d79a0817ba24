import {
  Agent,
  type ClientRequest,
  request as httpRequest,
  type IncomingMessage,
  type RequestOptions,
  type ServerResponse,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Duplex } from "node:stream";
import { isLeaseRefusal, REFUSAL_HEADER } from "../../../contract/header-names.ts";
import { forwardResponseRecord } from "../../../data-plane/header-hygiene.ts";
import type { ClientLink } from "../../../data-plane/inbound.ts";
import type { Delivery, Forward, Transport } from "../../../data-plane/transport.ts";
import type { Answer } from "../../../errors.ts";
import { DeadlineTimer, type Expiring } from "./deadline-timer.ts";
import { OriginCache } from "./origins.ts";
import { joinedRawHeader } from "./raw-header.ts";

const REFUSAL = REFUSAL_HEADER.toLowerCase();

/**
 * How long a pooled connection may sit idle. With no agent timeout at all Node ignores a server's
 * `Keep-Alive: timeout=N` hint; with one, it closes a second before the hint (a Node worker's is
 * 5 s), so an idle socket is dropped before the worker drops it.
 */
const IDLE_SOCKET_MS = 4_000;
/** RFC 9110 §9.2.2: what a client may send again on its own when a connection fails under it. */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);
const STALE_SOCKET_CODES = new Set(["ECONNRESET", "EPIPE"]);
const NULL_BODY_STATUS = new Set([204, 205, 304]);

/**
 * The data plane's HTTP transport on the Node entry: the client's `IncomingMessage` is piped into
 * an `http.request` to the owner (keep-alive pool, redirects never followed, content-encoding
 * untouched) and the worker's answer is piped back into the client's `ServerResponse`, with
 * Node's own backpressure. No web Request, Response or ReadableStream on the way.
 *
 * The forward timeout covers the wait for the answer's head; the client's going away ends the
 * forward at any point (its connection's close); the worker's going away mid-body ends the
 * client's response unfinished, so the client sees the truncation. The inflight slot is given back
 * once the client's response is finished or closed.
 */
export class NodeHttpTransport {
  private readonly agent = new Agent({ keepAlive: true, scheduling: "lifo", timeout: IDLE_SOCKET_MS });
  private readonly httpsAgent = new HttpsAgent({ keepAlive: true, scheduling: "lifo", timeout: IDLE_SOCKET_MS });
  private readonly origins = new OriginCache();
  /** Per tick length: a forward times out up to a tenth of its timeout late, at most 250 ms. */
  private readonly sweeps = new Map<number, DeadlineTimer<PendingForward>>();

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
    this.agent.destroy();
    this.httpsAgent.destroy();
  }

  private send(
    req: IncomingMessage,
    res: ServerResponse,
    client: ClientLink,
    forward: Forward,
    release: () => void,
  ): Promise<Delivery<void>> {
    const origin = this.origins.of(forward.advertiseUrl);
    const options: RequestOptions = {
      agent: origin.https ? this.httpsAgent : this.agent,
      host: origin.host,
      port: origin.port,
      path: `${origin.path}${forward.pathAndQuery}`,
      method: forward.method,
      headers: headerLines(forward, origin.hostHeader),
    };
    return new Promise<Delivery<void>>((resolve) => {
      const pending = new PendingForward(this.sweepFor(forward.timeoutMs), forward.timeoutMs, client, resolve);
      if (!pending.arm()) return;
      this.attempt(pending, req, res, forward, release, options, origin.https);
    });
  }

  /** Sends the request to the worker: once, or again when a stale pooled connection failed under it. */
  private attempt(
    pending: PendingForward,
    req: IncomingMessage,
    res: ServerResponse,
    forward: Forward,
    release: () => void,
    options: RequestOptions,
    https: boolean,
  ): void {
    let sent: ClientRequest;
    try {
      sent = https ? httpsRequest(options) : httpRequest(options);
    } catch (err) {
      // node:http refused to write the request (a header it will not send): nothing reached the worker.
      pending.settle({
        kind: "unreachable",
        connected: false,
        reason: err instanceof Error ? err.message : String(err),
        local: true,
      });
      return;
    }
    pending.upstream = sent;
    let answered = false;
    // `on`, not `once`: each event fires at most once on a request object used once, and
    // `once` would wrap every listener of every forward.
    sent.on("socket", (socket) => {
      if (!socket.connecting) pending.connected = true;
      else socket.once("connect", () => (pending.connected = true));
    });
    sent.on("error", (err: NodeJS.ErrnoException) => {
      // A pooled connection the worker closed while it sat idle (the two sides' timers raced, or
      // an event-loop stall hid the close): the worker never took the request, so it goes again
      // on another connection. Each such failure drops one pooled socket, so this ends.
      if (!answered && !pending.settled && isStaleReuse(sent, err, forward))
        this.attempt(pending, req, res, forward, release, options, https);
      else pending.unreachable(failureOf(err, sent.reusedSocket));
    });
    // A 101 to a request that asked for no upgrade: the socket is the worker's protocol now, not
    // an answer (without this listener Node destroys it and the request would never settle).
    sent.on("upgrade", (answer: IncomingMessage, socket: Duplex) => {
      answered = true;
      socket.destroy();
      pending.unreachable(`worker answered ${answer.statusCode ?? 101} to a request without an upgrade`);
    });
    sent.on("close", () => {
      if (!answered && sent === pending.upstream) pending.unreachable("connection closed before the worker answered");
    });
    sent.on("response", (answer: IncomingMessage) => {
      answered = true;
      if (pending.settled) {
        answer.destroy();
        return;
      }
      pending.settle(relay(res, answer, forward, release));
    });
    if (forward.withBody) req.pipe(sent);
    else sent.end();
  }

  private sweepFor(timeoutMs: number): DeadlineTimer<PendingForward> {
    const tick = Math.min(250, Math.max(1, Math.floor(timeoutMs / 10)));
    let sweep = this.sweeps.get(tick);
    if (!sweep) this.sweeps.set(tick, (sweep = new DeadlineTimer<PendingForward>(tick)));
    return sweep;
  }
}

/**
 * The forward's headers as node:http's flat [name, value, …] form, then its framing, Host last as
 * node:http adds it. Given an object, node:http validates and stores each header with setHeader
 * and writes them out in a second pass; given lines, it validates and writes them in one
 * (`npm run bench:ab`: 1.06 × req/s, 0.94 × CPU per forward).
 *
 * The framing is always explicit: node:http adds none of its own to a GET, HEAD, DELETE or
 * OPTIONS, so a body piped without it would be read by the worker as its next request.
 */
function headerLines(forward: Forward, host: string): string[] {
  const { headers, framing } = forward;
  const lines: string[] = [];
  for (const name in headers) lines.push(name, headers[name]!);
  if (framing.kind === "length" && (forward.withBody || framing.length === 0))
    lines.push("Content-Length", String(framing.length));
  else if (framing.kind === "chunked" && forward.withBody) lines.push("Transfer-Encoding", "chunked");
  lines.push("Host", host);
  return lines;
}

/**
 * A pooled connection that failed under a request the worker cannot have taken, and that a client
 * may send again on its own: the request goes again on another connection.
 */
function isStaleReuse(sent: ClientRequest, err: NodeJS.ErrnoException, forward: Forward): boolean {
  return (
    sent.reusedSocket && !forward.withBody && IDEMPOTENT.has(forward.method) && STALE_SOCKET_CODES.has(err.code ?? "")
  );
}

/**
 * Why a forward failed, for the log: the error, its code where the message lacks it, and whether
 * the connection was a pooled one.
 */
function failureOf(err: NodeJS.ErrnoException, pooled: boolean): string {
  const code = err.code !== undefined && !err.message.includes(err.code) ? ` (${err.code})` : "";
  return `${err.message}${code}${pooled ? " on a pooled connection" : ""}`;
}

/**
 * What the worker's answer comes to: an activation refusal dropped (the core sends the request
 * elsewhere) or relayed, or the answer piped to the client.
 */
function relay(res: ServerResponse, answer: IncomingMessage, forward: Forward, release: () => void): Delivery<void> {
  const status = answer.statusCode ?? 502;
  // What the Fetch API can carry (the Workers entry's limits), so both entries answer alike.
  if (status < 200 || status > 599) {
    answer.destroy();
    return { kind: "unreachable", connected: true, reason: `worker answered ${status}` };
  }
  const bodiless = forward.method === "HEAD" || NULL_BODY_STATUS.has(status);
  // The status first: only a 503 is worth scanning the header lines for the refusal.
  if (status === 503 && isLeaseRefusal(status, joinedRawHeader(answer.rawHeaders, REFUSAL))) {
    if (!forward.relayRefusal) {
      answer.resume();
      return { kind: "refused", relay: null };
    }
    // Held (paused) until the core has released the refused row.
    const drop = () => {
      answer.destroy();
      release();
    };
    const send = () => {
      if (writeHead(res, status, answer)) pipeAnswer(res, answer, bodiless, release);
      else {
        drop();
        res.destroy();
      }
    };
    return { kind: "refused", relay: { send, drop } };
  }
  if (!writeHead(res, status, answer)) {
    // A header node:http will not write back (it parsed it leniently): no answer to give.
    answer.destroy();
    return { kind: "unreachable", connected: true, reason: "the worker's answer has a header node:http cannot write" };
  }
  pipeAnswer(res, answer, bodiless, release);
  return { kind: "answered", status, result: undefined };
}

/** The worker's status and filtered headers on the client's response; false when node:http refuses them. */
function writeHead(res: ServerResponse, status: number, answer: IncomingMessage): boolean {
  try {
    res.writeHead(status, forwardResponseRecord(answer.rawHeaders, status));
    return true;
  } catch {
    return false;
  }
}

/** Pipes the body; a worker that stops mid-body leaves the client's response unfinished. */
function pipeAnswer(res: ServerResponse, answer: IncomingMessage, bodiless: boolean, release: () => void): void {
  if (res.destroyed) {
    // The client left while a refusal was held for its relay: nothing will finish or close now.
    answer.destroy();
    release();
    return;
  }
  let done = false;
  const finish = () => {
    if (done) return;
    done = true;
    release();
  };
  res.on("finish", finish);
  res.on("close", () => {
    if (!answer.complete) answer.destroy();
    finish();
  });
  answer.on("close", () => {
    if (!answer.complete) res.destroy();
  });
  answer.on("error", () => {});
  if (bodiless) {
    answer.resume();
    res.end();
  } else {
    answer.pipe(res);
  }
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

/**
 * One forward until its delivery settles: its request to the worker, and its deadline and client,
 * watched until the answer's head is in. The first of the answer, a failure, the timeout or the
 * client's going away settles it; the rest find it settled.
 */
class PendingForward implements Expiring {
  expiresAt = Infinity;
  timerOwner: object | undefined = undefined;
  timerPrev: Expiring | undefined = undefined;
  timerNext: Expiring | undefined = undefined;
  /** The request of the latest attempt. */
  upstream: ClientRequest | undefined = undefined;
  /** Whether the latest attempt's connection was made, for an unreachable delivery. */
  connected = false;
  settled = false;
  private stopListening: (() => void) | undefined;

  constructor(
    private readonly deadlines: DeadlineTimer<PendingForward>,
    private readonly timeoutMs: number,
    private readonly client: ClientLink,
    private readonly resolve: (delivery: Delivery<void>) => void,
  ) {}

  /** Starts watching; false (and settled) when the client has already gone. */
  arm(): boolean {
    if (this.client.gone) {
      this.end("aborted");
      return false;
    }
    this.expiresAt = this.deadlines.now() + this.timeoutMs;
    this.deadlines.add(this);
    this.stopListening = this.client.onGone(() => this.end("aborted"));
    return true;
  }

  expire(): void {
    this.end("timeout");
  }

  settle(delivery: Delivery<void>): void {
    if (this.settled) return;
    this.settled = true;
    this.deadlines.delete(this);
    this.stopListening?.();
    this.resolve(delivery);
  }

  unreachable(reason: string): void {
    this.settle({ kind: "unreachable", connected: this.connected, reason });
  }

  private end(why: "timeout" | "aborted"): void {
    this.upstream?.destroy();
    // The client went away first: a fresh placement is released, whether or not it connected.
    this.settle(why === "timeout" ? { kind: "timeout" } : { kind: "aborted", connected: false });
  }
}
