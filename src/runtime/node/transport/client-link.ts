import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import type { ClientLink } from "../../../data-plane/inbound.ts";

/**
 * The listeners of the forwards in flight on one client connection. A connection carries one
 * forward at a time unless its client pipelines, so the first listener takes a slot and only the
 * others need a Set. A Set alone re-allocated its hash table whenever a removal emptied it, once
 * per forward, and the table, held by the connection, survived young-generation collections.
 */
class ConnectionListeners {
  private one: (() => void) | undefined;
  private more: Set<() => void> | undefined;

  add(listener: () => void): void {
    if (this.one === undefined) this.one = listener;
    else (this.more ??= new Set()).add(listener);
  }

  delete(listener: () => void): void {
    if (this.one === listener) this.one = undefined;
    else this.more?.delete(listener);
  }

  /** Calls every listener once and forgets them. */
  fire(): void {
    const { one, more } = this;
    this.one = this.more = undefined;
    one?.();
    if (more) for (const listener of more) listener();
  }
}

/** Per client connection, the listeners of the forwards in flight on it. */
const listenersBySocket = new WeakMap<Duplex, ConnectionListeners>();

/**
 * Calls `listener` when the connection closes. One 'close' listener per connection, however many
 * requests a keep-alive connection carries: a listener added to and removed from each response
 * cost about a sixth of a proxied request's CPU (`npm run bench:ab`).
 */
function onClose(socket: Duplex, listener: () => void): () => void {
  const listeners = listenersBySocket.get(socket) ?? listenFor(socket);
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/**
 * The connection's listeners and its one 'close' listener. Made apart from `onClose` so the
 * 'close' closure's scope holds the listeners alone: created inside `onClose` it would keep that
 * call's `listener`, and with it the connection's first forward (its request, response and
 * upstream request), for as long as the connection lives.
 */
function listenFor(socket: Duplex): ConnectionListeners {
  const listeners = new ConnectionListeners();
  listenersBySocket.set(socket, listeners);
  socket.once("close", () => listeners.fire());
  return listeners;
}

/**
 * The client of a request on the Node entry, heard through its connection: an HTTP/1.1 client
 * that goes away closes it. No AbortSignal: Node's AbortSignal survives the young generation, and
 * a heap profile found one per request to be the largest class of objects promoted to the old
 * heap.
 *
 * A class, not an object literal with a getter: V8 builds such a literal on its slow path, as a
 * dictionary-mode object, and what its closures reach (the request's socket, response and every
 * listener they carry) then survived young-generation collections until the next full one, even
 * after the request was done (test/runtime/node/transport/client-link-young-gc.test.ts). One per
 * request made most of each request's objects survive scavenges (`--trace-gc-nvp`: 1.7 MB
 * surviving every 250 ms at 900 req/s, against 0.3 MB with this class).
 */
class SocketLink implements ClientLink {
  constructor(
    private readonly socket: Socket | Duplex,
    private readonly response: { readonly destroyed: boolean } | undefined,
  ) {}

  get gone(): boolean {
    return this.socket.destroyed || this.response?.destroyed === true;
  }

  onGone(listener: () => void): () => void {
    return onClose(this.socket, listener);
  }
}

export function socketLink(socket: Socket | Duplex, response?: { readonly destroyed: boolean }): ClientLink {
  return new SocketLink(socket, response);
}
