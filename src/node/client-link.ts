import type { ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { Context } from "hono";
import type { AppEnv } from "../deps.ts";
import { requestLink, type ClientLink } from "../resolve/worker-call.ts";

/** Per client connection, the listeners of the forwards in flight on it. */
const listenersBySocket = new WeakMap<Socket, Set<() => void>>();

/**
 * Calls `listener` when the connection closes. One 'close' listener per connection, however many
 * requests a keep-alive connection carries: a listener added to and removed from each response
 * cost about a sixth of a proxied request's CPU (`npm run bench:ab`).
 */
function onClose(socket: Socket, listener: () => void): () => void {
  let listeners = listenersBySocket.get(socket);
  if (!listeners) {
    const set = (listeners = new Set());
    listenersBySocket.set(socket, set);
    socket.once("close", () => {
      for (const l of set) l();
      set.clear();
    });
  }
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/**
 * The client link of a request the Node adapter serves, read from its connection rather than
 * `request.signal`, which would make the adapter build an AbortController per request (why that
 * matters: src/resolve/worker-call.ts). An HTTP/1.1 client that goes away closes its connection.
 */
export function nodeClientLink(c: Context<AppEnv>): ClientLink {
  const outgoing = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
  const socket = outgoing?.socket;
  if (!outgoing || !socket) return requestLink(c.req.raw);
  return {
    get gone() {
      return outgoing.destroyed || socket.destroyed;
    },
    onGone: (listener) => onClose(socket, listener),
  };
}
