import WebSocket from "ws";
import { isKeepAlivePong } from "./ws-keepalive.ts";

/**
 * Full duplex between the client's socket and the worker's: text and binary frames keep their
 * type, pings and pongs travel end to end (neither leg answers them itself), and a close on one
 * side closes the other with the same code and reason.
 *
 * Close codes that cannot go on the wire are mapped: 1005 (no status) closes the other side
 * without a status, so it sees 1005 too; 1006 (the connection dropped without a close frame)
 * closes the worker's side with 1001 "client went away" and the client's side with 1011
 * "worker connection lost". A message past the size cap (each socket's maxPayload) closes its
 * sender with 1009 (ws does it) and the other side with 1009 "message too big".
 *
 * Backpressure: once the receiving side has more than HIGH_WATER bytes queued, the sending side
 * stops reading (its TCP window fills up); it resumes when the queue has drained below LOW_WATER.
 */

export const HIGH_WATER = 1024 * 1024;
export const LOW_WATER = 256 * 1024;

const LOST = {
  client: { code: 1001, reason: "client went away" },
  upstream: { code: 1011, reason: "worker connection lost" },
} as const;

export interface Pipe {
  /** Resolves once both sides are closed. */
  readonly done: Promise<void>;
  /** Closes both sides with `code` (1001 on shutdown); terminates them after `graceMs`. */
  shutdown(code: number, reason: string, graceMs: number): Promise<void>;
}

export function pipeSockets(
  client: WebSocket,
  upstream: WebSocket,
  onError: (side: "client" | "upstream", err: Error) => void,
): Pipe {
  const closed = (ws: WebSocket) =>
    ws.readyState === WebSocket.CLOSED
      ? Promise.resolve()
      : new Promise<void>((resolve) => ws.once("close", () => resolve()));
  relay(client, upstream, LOST.client, (err) => onError("client", err));
  relay(upstream, client, LOST.upstream, (err) => onError("upstream", err));
  // The worker's socket arrives paused (see openUpstream): read it now that someone listens.
  upstream.resume();
  const done = Promise.all([closed(client), closed(upstream)]).then(() => undefined);

  return {
    done,
    async shutdown(code, reason, graceMs) {
      for (const ws of [client, upstream]) closeWith(ws, code, reason);
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([done, new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs)))]);
      clearTimeout(timer);
      client.terminate();
      upstream.terminate();
      await done;
    },
  };
}

/** Everything `from` receives goes to `to`; `from`'s close closes `to`. */
function relay(
  from: WebSocket,
  to: WebSocket,
  lost: { code: number; reason: string },
  onError: (err: Error) => void,
): void {
  const open = () => to.readyState === WebSocket.OPEN;
  const drained = () => {
    if (from.isPaused && to.bufferedAmount <= LOW_WATER) from.resume();
  };

  from.on("message", (data, isBinary) => {
    if (!open()) return;
    to.send(data as Buffer, { binary: isBinary }, drained);
    if (to.bufferedAmount > HIGH_WATER) from.pause();
  });
  from.on("ping", (data) => {
    if (open()) to.ping(data);
  });
  from.on("pong", (data) => {
    if (open() && !isKeepAlivePong(data)) to.pong(data);
  });
  from.on("close", (code, reason) => {
    if (code === 1005) closeWith(to);
    else if (code === 1006) closeWith(to, lost.code, lost.reason);
    else closeWith(to, code, reason);
  });
  from.on("error", (err: Error & { code?: string }) => {
    // ws has stopped reading `from` and sends it 1009; its close may come as 1006 much later.
    if (err.code === "WS_ERR_UNSUPPORTED_MESSAGE_LENGTH") closeWith(to, 1009, "message too big");
    onError(err);
  });
  // A side that stopped reading must still see the closing handshake once the other is gone.
  to.once("close", () => from.resume());
}

/** Starts the closing handshake unless one is already under way; no code sends an empty close. */
function closeWith(ws: WebSocket, code?: number, reason?: string | Buffer): void {
  if (ws.readyState === WebSocket.CLOSING || ws.readyState === WebSocket.CLOSED) return;
  if (ws.readyState === WebSocket.CONNECTING) {
    ws.terminate();
    return;
  }
  if (code === undefined) ws.close();
  else ws.close(code, reason);
}
