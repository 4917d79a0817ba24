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
