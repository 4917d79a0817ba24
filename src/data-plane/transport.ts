import type { Answer } from "../errors/pinboard-error.ts";
import type { ClientGone, TimedOut, Unreachable } from "../outbound/failures.ts";
import type { RequestFraming } from "./framing.ts";

/**
 * How the data plane reaches workers, implemented once per runtime: over fetch
 * (src/data-plane/fetch-transport.ts, the Workers entry) and over node:http and `ws`
 * (src/runtime/node/transport/, the Node entry). The core decides everything else (the path, the plan,
 * placement, the attested headers, refusals, outcomes, error rendering) and hands a transport
 * one `Forward` at a time; `T` is what the runtime answers the client with (a Response on fetch,
 * nothing on Node, whose transport writes to the client's response or socket itself).
 */

/** One send to a placement's owner, fully decided. */
export interface Forward {
  /** The owner's advertise URL, as registered. */
  advertiseUrl: string;
  /** `{ns}/{id}{rest}{query}`, appended to the advertise URL. */
  pathAndQuery: string;
  method: string;
  /** The filtered, attested request headers (names lower-case). */
  headers: Record<string, string>;
  /**
   * The same headers with a fresh attestation, for a transport that sends the forward again on
   * its own (a pooled connection found dead): a worker accepts each attestation once.
   */
  reattested?: () => Promise<Record<string, string>>;
  /** A WebSocket handshake rather than a plain request. */
  upgrade: boolean;
  /** The client's body goes along (false when it has none, or on a re-placement, which sends none). */
  withBody: boolean;
  /**
   * How the transport frames the body it sends: the client's Content-Length or chunked, never
   * anything the headers above say (they carry no framing header).
   */
  framing: RequestFraming;
  /**
   * An activation refusal (503 + Pinned-Refusal) is relayed to the client as it is, because the
   * request cannot be sent again (its body is gone); otherwise the transport drops it.
   */
  relayRefusal: boolean;
  /**
   * How long the worker may take to answer, from the client's last byte (at once without a body):
   * time the client takes to upload is never the worker's. The answer's body may then take as
   * long as it needs.
   */
  timeoutMs: number;
  /**
   * How long the client's upload may take from the forward's start (0: no limit), past which the
   * client is answered 408 and the worker is not blamed. The Node transport leaves it to
   * node:http, whose request timeout (the same setting) already bounds the whole request.
   */
  uploadTimeoutMs: number;
}

/** What one send came to. */
export type Delivery<T> =
  /** The worker answered (anything but an activation refusal); `result` is the client's answer. */
  | { kind: "answered"; status: number; result: T }
  /**
   * 503 + Pinned-Refusal: lease-unhealthy, dropped (`relay` null) or to be relayed to the client.
   * The core releases the refused row first, so that a client retrying at once is not placed on
   * the same worker again, and only then sends the relay (or drops it when the release failed).
   */
  | { kind: "refused"; relay: Relay<T> | null }
  | Unreachable
  | TimedOut
  /**
   * The client went away. `connected` false releases a fresh placement: only a forward that
   * never left may say so. One that may have reached the worker (handed to a connection, a fetch
   * under way) says true: the worker may hold the instance at this epoch already, and a release
   * would let the next request place it elsewhere, at a newer epoch, beside that activation.
   */
  | ClientGone
  /** The client's upload outlasted `uploadTimeoutMs`: answered 408, never counted against the worker. */
  | { kind: "client-timeout" };

/** A worker's refusal held back until the core has released the row; the transport owns `release` until then. */
export interface Relay<T> {
  /** Answers the client with the worker's 503 (the inflight slot is given back once it is sent). */
  send(): T;
  /** Discards it and gives the inflight slot back. */
  drop(): void;
}

export interface Transport<T> {
  /**
   * Sends to the owner. On "answered" (and a refusal to relay) the transport owns `release` (the
   * inflight slot) and calls it once the exchange is over: the body sent, the socket closed; on
   * every other outcome the core releases it.
   */
  send(forward: Forward, release: () => void): Promise<Delivery<T>>;
  /** Pinboard's own answer: an error, 502 bad gateway, 504 upstream timeout, an empty 502. */
  reply(answer: Answer): T;
  /** Keeps work alive after the answer (waitUntil on Workers; Node's promises run on). */
  defer(work: Promise<unknown>): void;
}
