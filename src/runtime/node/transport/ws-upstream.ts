import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import WebSocket from "ws";
import type { ClientLink } from "../../../data-plane/inbound.ts";
import type { ClientGone, TimedOut, Unreachable } from "../../../outbound/failures.ts";

/** How the opening handshake with the worker ended. */
export type UpstreamOutcome =
  /** 101: the worker accepted; `headers` are those of its 101. The socket comes back paused. */
  | { kind: "open"; ws: WebSocket; headers: IncomingHttpHeaders }
  /** Any other status: the caller relays or handles it, then calls `ws.terminate()`. */
  | { kind: "response"; ws: WebSocket; response: IncomingMessage }
  | Unreachable
  | TimedOut
  | ClientGone;

export interface UpstreamRequest {
  /** `{advertiseUrl}{ns}/{id}{rest}{query}` (http(s) URLs are fine: `ws` maps them). */
  url: string;
  headers: Record<string, string>;
  protocols: string[];
  /** forwards.timeoutMs: how long the worker may take to answer the handshake. */
  timeoutMs: number;
  /** The largest message the worker may send (fragments summed); past it ws closes with 1009. */
  maxMessageBytes: number;
  /** The client's side: its going away ends the handshake. */
  client: ClientLink;
}

/**
 * Opens the WebSocket to the worker with `ws`: redirects are never followed, permessage-deflate is
 * not offered (each leg frames on its own), pings are relayed rather than answered here. The
 * handshake is raced against the forward timeout and the client going away; whether the TCP
 * connection was ever made tells a fresh placement to release (nothing reached the worker).
 */
export function openUpstream(request: UpstreamRequest): Promise<UpstreamOutcome> {
  return new Promise<UpstreamOutcome>((resolve) => {
    if (request.client.gone) {
      resolve({ kind: "aborted", connected: false });
      return;
    }
    let connected = false;
    let settled = false;
    let upgradeHeaders: IncomingHttpHeaders = {};
    let ws: WebSocket;
    try {
      ws = new WebSocket(request.url, request.protocols, {
        headers: request.headers,
        perMessageDeflate: false,
        autoPong: false,
        maxPayload: request.maxMessageBytes,
        followRedirects: false,
        finishRequest: (req) => {
          req.once("socket", (socket: Socket) => {
            if (!socket.connecting) connected = true;
            else socket.once("connect", () => (connected = true));
          });
          req.end();
        },
      });
    } catch (err) {
      resolve({ kind: "unreachable", connected: false, reason: err instanceof Error ? err.message : String(err) });
      return;
    }

    const finish = (outcome: UpstreamOutcome, terminate: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stopListening();
      if (terminate) ws.terminate();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ kind: "timeout" }, true), request.timeoutMs);
    const stopListening = request.client.onGone(() => finish({ kind: "aborted", connected }, true));

    // Stays attached: errors after the handshake are the pipe's business (it adds its own).
    ws.on("error", (err) => finish({ kind: "unreachable", connected, reason: err.message }, false));
    ws.once("upgrade", (res) => (upgradeHeaders = res.headers));
    ws.once("open", () => {
      // Frames may follow the 101 at once (even in the same packet); nobody listens yet.
      ws.pause();
      finish({ kind: "open", ws, headers: upgradeHeaders }, false);
    });
    ws.once("unexpected-response", (_req, response) => {
      response.on("error", () => {});
      finish({ kind: "response", ws, response }, false);
    });
  });
}
