import { upgradeWebSocket } from "@hono/node-server";
import type { Context } from "hono";
import type { WSContext } from "hono/ws";
import type { AcceptedWebSocket, AcceptWebSocketOptions } from "./types.ts";

/**
 * WebSocket accept on Node.
 *
 * How it works: worker.listen() serves the app with @hono/node-server and a `ws` server in
 * noServer mode. node-server hands every `Upgrade: websocket` request to the Hono app with an env
 * that can complete the handshake. The data-plane route registers the Request it gives the
 * instance (prepareUpgrade); ctx.acceptWebSocket(request) creates a PinnedWebSocket and returns
 * a marker Response; when fetch returns that marker, the route calls node-server's
 * upgradeWebSocket, which lets `ws` finish the handshake and then feeds the socket's events to
 * the PinnedWebSocket (and the instance's webSocketMessage/Close/Error hooks). Any other
 * Response from fetch rejects the upgrade with that status. Sends made before the handshake
 * completes are queued.
 */

export type SocketData = string | ArrayBuffer | Uint8Array<ArrayBuffer>;

export interface SocketEvents {
  open: Record<string, never>;
  message: { data: string | ArrayBuffer };
  close: { code: number; reason: string };
  error: { error: unknown };
}

export interface SocketSink {
  message(socket: PinnedWebSocket, data: string | ArrayBuffer): void;
  close(socket: PinnedWebSocket, code: number, reason: string): void;
  error(socket: PinnedWebSocket, error: unknown): void;
  /** The output gate: null when nothing written is in flight, else when it is durable (rejects if it failed). */
  confirmed(): Promise<void> | null;
}

export class PinnedWebSocket {
  /** Free slot for the instance's per-connection data. */
  attachment: unknown = undefined;
  readonly tags: readonly string[];
  readonly url: string;
  private ws: WSContext | null = null;
  private state: 0 | 1 | 2 | 3 = 0;
  private queued: SocketData[] = [];
  private closeRequested: { code: number; reason: string } | null = null;
  /** Sends and a close waiting at the output gate, in order; null when none waits. */
  private outbox: Promise<void> | null = null;
  private readonly listeners = new Map<keyof SocketEvents, Set<(event: never) => void>>();

  constructor(
    url: string,
    tags: readonly string[],
    private readonly sink: SocketSink,
  ) {
    this.url = url;
    this.tags = tags;
  }

  /** 0 connecting, 1 open, 2 closing, 3 closed. */
  get readyState(): 0 | 1 | 2 | 3 {
    return this.state;
  }

  addEventListener<K extends keyof SocketEvents>(type: K, listener: (event: SocketEvents[K]) => void): void {
    let set = this.listeners.get(type);
    if (!set) this.listeners.set(type, (set = new Set()));
    set.add(listener as (event: never) => void);
  }

  removeEventListener<K extends keyof SocketEvents>(type: K, listener: (event: SocketEvents[K]) => void): void {
    this.listeners.get(type)?.delete(listener as (event: never) => void);
  }

  /**
   * Sends, or, after a storage write still in flight, queues the message until the write is
   * durable (the output gate); a failed write drops it (the instance closes its sockets).
   */
  send(data: SocketData): void {
    if (this.state > 1) throw new Error("WebSocket is closed");
    this.afterOutputGate(() => this.transmit(data), false);
  }

  /** Closes after the messages sent before it, once the writes before it are durable or failed. */
  close(code = 1000, reason = ""): void {
    this.afterOutputGate(() => this.closeNow(code, reason), true);
  }

  private afterOutputGate(step: () => void, evenIfFailed: boolean): void {
    const confirmed = this.sink.confirmed();
    if (!confirmed && !this.outbox) {
      step();
      return;
    }
    const next = Promise.all([this.outbox, confirmed]).then(step, evenIfFailed ? step : () => {});
    this.outbox = next;
    void next.then(() => {
      if (this.outbox === next) this.outbox = null;
    });
  }

  private transmit(data: SocketData): void {
    if (this.state === 0) this.queued.push(data);
    else if (this.state === 1) this.ws!.send(data);
  }

  private closeNow(code: number, reason: string): void {
    if (this.state === 0) this.closeRequested = { code, reason };
    else if (this.state === 1) {
      this.state = 2;
      this.ws!.close(code, reason);
    }
  }

  private emit<K extends keyof SocketEvents>(type: K, event: SocketEvents[K]): void {
    for (const listener of this.listeners.get(type) ?? []) {
      try {
        (listener as (e: SocketEvents[K]) => void)(event);
      } catch (err) {
        this.sink.error(this, err);
      }
    }
  }

  /** @internal */
  opened(ws: WSContext): void {
    this.ws = ws;
    this.state = 1;
    for (const data of this.queued.splice(0)) ws.send(data);
    this.emit("open", {});
    if (this.closeRequested) this.closeNow(this.closeRequested.code, this.closeRequested.reason);
  }

  /** @internal */
  received(data: string | ArrayBuffer): void {
    this.emit("message", { data });
    this.sink.message(this, data);
  }

  /** @internal */
  closed(code: number, reason: string): void {
    if (this.state === 3) return;
    this.state = 3;
    this.emit("close", { code, reason });
    this.sink.close(this, code, reason);
  }

  /** @internal */
  failed(error: unknown): void {
    this.emit("error", { error });
    this.sink.error(this, error);
  }
}

interface UpgradeSlot {
  c: Context;
  accepted: AcceptedWebSocket | null;
}

const slots = new WeakMap<Request, UpgradeSlot>();

export function isUpgrade(request: Request): boolean {
  return request.headers.get("upgrade")?.toLowerCase() === "websocket";
}

/** True when the request arrived through a server that can complete WebSocket handshakes. */
export function canUpgrade(c: Context): boolean {
  const env = c.env as { wss?: unknown; incoming?: unknown } | undefined;
  return isUpgrade(c.req.raw) && !!env?.wss && !!env.incoming;
}

/** Lets ctx.acceptWebSocket(request) accept this request later in the same fetch. */
export function prepareUpgrade(request: Request, c: Context): void {
  if (canUpgrade(c)) slots.set(request, { c, accepted: null });
}

export function acceptUpgrade(request: Request, options: AcceptWebSocketOptions, sink: SocketSink): AcceptedWebSocket {
  const slot = slots.get(request);
  if (!slot) {
    throw new TypeError(
      isUpgrade(request)
        ? "acceptWebSocket needs the server of worker.listen() (or createPinnedServer) to complete the handshake"
        : "acceptWebSocket: the request is not a WebSocket upgrade",
    );
  }
  if (slot.accepted) throw new TypeError("acceptWebSocket: this request was already accepted");
  const socket = new PinnedWebSocket(request.url, options.tags ?? [], sink);
  slot.accepted = { socket, response: new Response(null, { status: 200 }) };
  return slot.accepted;
}

/** Completes the handshake when fetch returned the marker of acceptWebSocket; otherwise passes through. */
export async function completeUpgrade(request: Request, response: Response): Promise<Response> {
  const slot = slots.get(request);
  slots.delete(request);
  if (!slot?.accepted) return response;
  const socket = slot.accepted.socket;
  if (slot.accepted.response !== response) {
    // Accepted, then answered with something else: the handshake is rejected with that status.
    socket.closed(1006, "upgrade not completed");
    return response;
  }
  // A handshake that dies before it opens produces no events; the TCP socket's close tells us.
  const incoming = (slot.c.env as { incoming?: { socket?: { once(e: "close", f: () => void): void } } }).incoming;
  incoming?.socket?.once("close", () => {
    if (socket.readyState === 0) socket.closed(1006, "handshake aborted");
  });
  return upgradeWebSocket(slot.c, {
    onOpen: (_event, ws) => socket.opened(ws),
    onMessage: (event, _ws) => socket.received(event.data as string | ArrayBuffer),
    onClose: (event) => socket.closed(event.code, event.reason),
    onError: (event) => socket.failed((event as ErrorEvent).error ?? event),
  });
}

/** Accepts the handshake only to close it at once with `code` (1008 for a bad attestation). */
export function acceptAndClose(c: Context, code: number, reason: string): Promise<Response> {
  return upgradeWebSocket(c, { onOpen: (_event, ws) => ws.close(code, reason) });
}

/** Forgets an upgrade that never completed (fetch threw). */
export function dropUpgrade(request: Request): void {
  slots.get(request)?.accepted?.socket.closed(1006, "upgrade not completed");
  slots.delete(request);
}
