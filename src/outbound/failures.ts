/**
 * How a call to a worker can fail before it has an answer, the same for every caller: the data
 * plane's forwards (src/data-plane/transport.ts, the WebSocket handshake of
 * src/runtime/node/transport/ws-upstream.ts) and the control plane's JSON calls (./worker-call.ts).
 */

/** No HTTP answer: the connection failed or broke. `connected` says whether TCP got through. */
export interface Unreachable {
  kind: "unreachable";
  connected: boolean;
  reason: string;
  /**
   * The failure is on Pinboard's side of the call (a request its HTTP client refused to send, an
   * answer its runtime cannot carry), so it never counts toward the worker's outlier ejection.
   */
  local?: true;
}

/** The worker did not answer within the caller's time. */
export interface TimedOut {
  kind: "timeout";
}

/** The client went away before the call was over; `connected` says whether the worker was reached. */
export interface ClientGone {
  kind: "aborted";
  connected: boolean;
}

const CONNECT_ERRORS =
  /ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH|UND_ERR_CONNECT_TIMEOUT|UND_ERR_SOCKET_CONNECT/;

/** True when a fetch failure happened before a TCP connection existed (nothing reached the worker). */
export function neverConnected(err: unknown): boolean {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const text = `${cause?.code ?? ""} ${cause?.message ?? ""} ${err instanceof Error ? err.message : ""}`;
  return CONNECT_ERRORS.test(text) || /connection refused|could not connect|dns/i.test(text);
}

/** An Unreachable for a failed fetch: the underlying cause when there is one. */
export function unreachableFetch(err: unknown): Unreachable {
  return {
    kind: "unreachable",
    connected: !neverConnected(err),
    reason: err instanceof Error ? String(err.cause ?? err.message) : String(err),
  };
}
