import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { ClientLink } from "../../data-plane/inbound.ts";

/** Per client connection, the listeners of the forwards in flight on it. */
const listenersBySocket = new WeakMap<Duplex, Set<() => void>>();

/**
 * Calls `listener` when the connection closes. One 'close' listener per connection, however many
 * requests a keep-alive connection carries: a listener added to and removed from each response
 * cost about a sixth of a proxied request's CPU (`npm run bench:ab`).
 */
function onClose(socket: Duplex, listener: () => void): () => void {
  const listeners = listenersBySocket.get(socket) ?? listenFor(socket);
  listeners.add(listener);
  return () => void listeners.delete(listener);
}

/**
 * The connection's listener set and its one 'close' listener. Made apart from `onClose` so the
 * 'close' closure's scope holds the set alone: created inside `onClose` it would keep that call's
 * `listener`, and with it the connection's first forward (its request, response and upstream
 * request), for as long as the connection lives.
 */
function listenFor(socket: Duplex): Set<() => void> {
  const listeners = new Set<() => void>();
  listenersBySocket.set(socket, listeners);
  socket.once("close", () => {
    for (const l of listeners) l();
    listeners.clear();
  });
  return listeners;
}

/**
 * The client of a request on the Node entry, heard through its connection: an HTTP/1.1 client
 * that goes away closes it. No AbortSignal: Node's AbortSignal survives the young generation, and
 * a heap profile found one per request to be the largest class of objects promoted to the old
 * heap.
 */
export function socketLink(socket: Socket | Duplex, response?: { readonly destroyed: boolean }): ClientLink {
  return {
    get gone() {
      return socket.destroyed || response?.destroyed === true;
    },
    onGone: (listener) => onClose(socket, listener),
  };
}
