import type { IncomingMessage, ServerResponse } from "node:http";
import type { Dispatcher } from "undici";
import { isLeaseRefusal, REFUSAL_HEADER } from "../../../contract/header-names.ts";
import { forwardResponseRecord } from "../../../data-plane/header-hygiene.ts";
import type { ClientLink } from "../../../data-plane/inbound.ts";
import type { Delivery, Forward } from "../../../data-plane/transport.ts";
import type { DeadlineTimer, Expiring } from "./deadline-timer.ts";
import { joinedRawHeader } from "./raw-header.ts";

const REFUSAL = REFUSAL_HEADER.toLowerCase();
const NULL_BODY_STATUS = new Set([204, 205, 304]);

/**
 * What the exchange does with the answer's body once its head is in: nothing yet, write it to the
 * client, let it go by (the connection stays usable), hold it (a refusal awaiting its relay), or
 * nothing more (the worker's connection failed while the refusal was held).
 */
type BodyMode = "waiting" | "relay" | "discard" | "held" | "failed";
/** undici's codes for a request it refused to send (a header or method it will not write). */
const REFUSED_LOCALLY = new Set(["UND_ERR_INVALID_ARG", "UND_ERR_NOT_SUPPORTED"]);

/**
 * One forward as undici sees it (its dispatch handler), from the request's dispatch to the last
 * byte of the answer relayed to the client's `ServerResponse`.
 *
 * Until the answer's head is in, the forward's deadline and its client are watched: the first of
 * the head, a failure, the timeout or the client's going away settles the delivery, and the rest
 * find it settled. The deadline runs from the client's last byte: an upload's time is the
 * client's, bounded by node:http's request timeout (408). A client that breaks its body off
 * closes its connection, whose 'close' settles the forward as the client's going away before
 * undici hears of the broken body (node:http destroys the request, whose error comes a tick
 * later).
 *
 * After the head, the body is written to the client as it comes, with the client's backpressure
 * pausing the worker's connection; a worker that stops mid-body leaves the client's response
 * unfinished (the client sees the truncation), and a client that leaves mid-body closes the
 * worker's connection. The inflight slot is given back once the client's response is finished or
 * closed.
 *
 * It implements undici's raw handler callbacks (onConnect … onComplete): their header lines come
 * as bytes, which are read as latin1 exactly as node:http reads them, so any byte a worker may
 * send in a header value is relayed as it came (docs/decisions.md).
 */
export class ForwardExchange implements Dispatcher.DispatchHandler, Expiring {
  expiresAt = Infinity;
  timerOwner: object | undefined = undefined;
  timerPrev: Expiring | undefined = undefined;
  timerNext: Expiring | undefined = undefined;
  /** Whether the request was handed to a connection (undici's onConnect): it may have reached the worker. */
  connected = false;
  settled = false;
  private answered = false;
  private mode: BodyMode = "waiting";
  private abortUpstream: ((err?: Error) => void) | undefined;
  private resumeUpstream: (() => void) | undefined;
  private stopListening: (() => void) | undefined;
  private released = false;

  constructor(
    private readonly res: ServerResponse,
    private readonly forward: Forward,
    private readonly client: ClientLink,
    /** The client's body being sent (null when none goes): the deadline starts at its end. */
    private readonly upload: IncomingMessage | null,
    private readonly deadlines: DeadlineTimer<ForwardExchange>,
    private readonly release: () => void,
    private readonly resolve: (delivery: Delivery<void>) => void,
    /** Called instead of settling when a failure may be retried (a stale pooled connection). */
    private readonly retry: (err: Error) => boolean,
  ) {}

  /** Starts watching the deadline and the client; false (and settled) when the client has already gone. */
  arm(): boolean {
    if (this.client.gone) {
      this.end("aborted");
      return false;
    }
    this.stopListening = this.client.onGone(() => this.end("aborted"));
    const { upload } = this;
    if (upload === null || upload.complete) this.startDeadline();
    else upload.once("end", () => this.startDeadline());
    return true;
  }

  /** The worker's time starts: the request is all sent (or being sent from a body already in). */
  private startDeadline(): void {
    if (this.settled) return;
    this.expiresAt = this.deadlines.now() + this.forward.timeoutMs;
    this.deadlines.add(this);
  }

  expire(): void {
    this.end("timeout");
  }

  private settle(delivery: Delivery<void>): void {
    if (this.settled) return;
    this.settled = true;
    this.deadlines.delete(this);
    this.stopListening?.();
    this.resolve(delivery);
  }

  private unreachable(reason: string, local?: true): void {
    this.settle({ kind: "unreachable", connected: this.connected, reason, ...(local ? { local } : {}) });
  }

  onConnect(abort: (err?: Error) => void): void {
    this.abortUpstream = abort;
    this.connected = true;
    // Timed out or abandoned while waiting for a connection: nothing is sent.
    if (this.settled && !this.answered) abort();
  }

  onHeaders(status: number, rawHeaders: Buffer[], resume: () => void): boolean {
    // 1xx interim answers (103 Early Hints) are not the answer.
    if (status < 200) return true;
    this.answered = true;
    this.resumeUpstream = resume;
    if (this.settled) {
      this.abortUpstream?.();
      return false;
    }
    if (status > 599) {
      // What the Fetch API can carry (the Workers entry's limits), so both entries answer alike.
      this.abortUpstream?.();
      this.unreachable(`worker answered ${status}`);
      return false;
    }
    const raw = latin1Lines(rawHeaders);
    // The status first: only a 503 is worth scanning the header lines for the refusal.
    if (status === 503 && isLeaseRefusal(status, joinedRawHeader(raw, REFUSAL))) return this.refused(status, raw);
    if (!this.writeHead(status, raw)) {
      // A header node:http will not write back: no answer to give.
      this.abortUpstream?.();
      this.unreachable("the worker's answer has a header node:http cannot write");
      return false;
    }
    this.settle({ kind: "answered", status, result: undefined });
    return true;
  }

  onData(chunk: Buffer): boolean {
    if (this.mode !== "relay") return this.mode !== "held";
    if (this.res.write(chunk)) return true;
    this.res.once("drain", this.resumeUpstream!);
    return false;
  }

  onComplete(): void {
    if (this.mode === "relay") {
      this.mode = "discard";
      this.res.end();
    }
  }

  onError(err: Error): void {
    if (!this.answered) {
      if (this.settled) return;
      const code = (err as NodeJS.ErrnoException).code ?? "";
      if (REFUSED_LOCALLY.has(code)) this.unreachable(err.message, true);
      else if (!this.retry(err)) this.unreachable(failureOf(err));
      return;
    }
    // Mid-body: the client's response stays unfinished, so the client sees the truncation.
    if (this.mode === "relay") this.res.destroy();
    this.mode = this.mode === "held" ? "failed" : "discard";
  }

  /** An activation refusal: dropped (the core sends the request elsewhere) or held for its relay. */
  private refused(status: number, raw: string[]): boolean {
    if (!this.forward.relayRefusal) {
      this.mode = "discard";
      this.settle({ kind: "refused", relay: null });
      return true;
    }
    // Held (paused) until the core has released the refused row.
    this.mode = "held";
    const drop = () => {
      this.mode = "discard";
      this.abortUpstream?.();
      this.releaseOnce();
    };
    const send = () => {
      if (this.res.destroyed || this.mode === "failed") {
        // The client left, or the worker's connection failed, while the refusal was held.
        drop();
        this.res.destroy();
        return;
      }
      if (!this.writeHead(status, raw)) {
        drop();
        this.res.destroy();
        return;
      }
      this.resumeUpstream?.();
    };
    this.settle({ kind: "refused", relay: { send, drop } });
    return false;
  }

  /** The worker's status and filtered headers on the client's response; false when node:http refuses them. */
  private writeHead(status: number, raw: string[]): boolean {
    const { res } = this;
    try {
      res.writeHead(status, forwardResponseRecord(raw, status));
    } catch {
      return false;
    }
    res.on("finish", () => this.releaseOnce());
    res.on("close", () => {
      if (this.mode === "relay") this.abortUpstream?.();
      this.mode = "discard";
      this.releaseOnce();
    });
    if (this.forward.method === "HEAD" || NULL_BODY_STATUS.has(status)) {
      this.mode = "discard";
      res.end();
    } else this.mode = "relay";
    return true;
  }

  private releaseOnce(): void {
    if (this.released) return;
    this.released = true;
    this.release();
  }

  private end(why: "timeout" | "aborted"): void {
    // The client went away first. A forward handed to a connection may have reached the worker,
    // which then holds the instance at this epoch: its placement must stay (connected), or the
    // next request would place it elsewhere beside that activation.
    this.settle(why === "timeout" ? { kind: "timeout" } : { kind: "aborted", connected: this.connected });
    // Settled first: undici reports the abort to onError at once.
    if (!this.answered) this.abortUpstream?.();
  }
}

/** undici's header lines as node:http gives them: strings of the bytes as received. */
function latin1Lines(raw: Buffer[]): string[] {
  const lines = new Array<string>(raw.length);
  for (let i = 0; i < raw.length; i++) lines[i] = raw[i]!.toString("latin1");
  return lines;
}

/** Why a forward failed, for the log: the error and its code where the message lacks it. */
export function failureOf(err: Error): string {
  // undici's name for a 101 to a request that asked for no upgrade (it closes the connection).
  if (err.message === "bad upgrade") return "worker answered 101 to a request without an upgrade";
  const code = (err as NodeJS.ErrnoException).code;
  return code !== undefined && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}
