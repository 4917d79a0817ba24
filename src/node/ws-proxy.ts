import type { IncomingHttpHeaders, IncomingMessage, Server } from "node:http";
import type { Duplex } from "node:stream";
import { WebSocketServer, type WebSocket } from "ws";
import type { AppDeps } from "../deps.ts";
import { errorResponse, notFound, PinboardError } from "../errors.ts";
import { clientIpAffinity, type AffinityKey } from "../resolve/affinity.ts";
import { forwardResponseHeaders } from "../resolve/headers.ts";
import { Refusal } from "../resolve/outcomes.ts";
import { planForward } from "../resolve/plan.ts";
import type { Proxy } from "../resolve/proxy.ts";
import { parseDataPath, type DataPath } from "../resolve/route.ts";
import { headersOf, relayResponse, sendResponse } from "./ws-proxy-http.ts";
import { pipeSockets, type Pipe } from "./ws-proxy-pipe.ts";
import { WebSocketPlacer, type Placed } from "./ws-proxy-placement.ts";
import { replayAsPlainRequest } from "./upgrade-replay.ts";
import { isWebSocketRequest, isWellFormedHandshake, requestedProtocols, webRequestOf } from "./ws-proxy-request.ts";

export interface WebSocketProxyOptions {
  deps: AppDeps;
  /** The HTTP proxy of createPinboard: its inflight gate and outlier tracker are shared. */
  proxy: Proxy;
  /** The affinity key of new placements (the same as the HTTP data plane's). */
  affinityKey?: AffinityKey;
}

/** How long stop() lets proxied sockets finish their closing handshake before cutting them. */
const SHUTDOWN_GRACE_MS = 2000;

/**
 * WebSocket upgrades through the Node entry. The HTTP path forwards upgrades with fetch, which
 * only Workers can do; on Node the server's 'upgrade' event lands here instead. The decisions are
 * the HTTP path's (planForward, resolvePlacement, the shared inflight gate, the same attested and
 * filtered headers), then a `ws` client opens the worker's socket and, only once the worker has
 * answered 101, a noServer `ws` server completes the client's handshake and the two are piped.
 *
 * Everything answered before the handshake is plain HTTP on the socket, as the HTTP path would
 * answer it, except that every 404 (a path outside the data plane, /registry/*, an unknown
 * namespace) is 404 {"error":"not found"} for an upgrade. Upgrades to anything but `websocket`
 * are not upgrades at all: attach() hands them back to the HTTP server as plain requests.
 */
export class WebSocketProxy {
  private readonly wss: WebSocketServer;
  private readonly placer: WebSocketPlacer;
  private readonly affinityKey: AffinityKey;
  private readonly pipes = new Set<Pipe>();
  private readonly pending = new Set<Duplex>();
  /** Per handshake: the subprotocol the worker chose and the worker's 101 headers to pass on. */
  private readonly chosen = new WeakMap<IncomingMessage, { protocol: string; lines: string[] }>();
  private closing = false;

  constructor(private readonly options: WebSocketProxyOptions) {
    this.placer = new WebSocketPlacer(options.deps, options.proxy);
    this.affinityKey = options.affinityKey ?? clientIpAffinity;
    this.wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      autoPong: false,
      handleProtocols: (_offered, req) => this.chosen.get(req)?.protocol || false,
    });
    this.wss.on("headers", (lines, req) => {
      lines.push(...(this.chosen.get(req)?.lines ?? []));
    });
  }

  /**
   * Becomes the server's only 'upgrade' listener (@hono/node-server must not add its own). An
   * upgrade to anything but a WebSocket goes back to the server as a plain request.
   */
  attach(server: Pick<Server, "on" | "listenerCount" | "emit">): void {
    if (server.listenerCount("upgrade") > 0) throw new Error("the server already handles upgrades; the WebSocket proxy must be its only 'upgrade' listener");
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (isWebSocketRequest(req)) void this.handle(req, socket, head);
      else replayAsPlainRequest(server, req, socket, head);
    });
  }

  /** Closes every proxied socket with 1001 (both sides) and cuts handshakes in progress. */
  async close(): Promise<void> {
    this.closing = true;
    for (const socket of this.pending) socket.destroy();
    await Promise.all([...this.pipes].map((pipe) => pipe.shutdown(1001, "pinboard shutting down", SHUTDOWN_GRACE_MS)));
  }

  async handle(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const controller = new AbortController();
    const gone = () => controller.abort();
    socket.on("error", () => {});
    socket.once("close", gone);
    this.pending.add(socket);
    try {
      await this.upgrade(req, socket, head, controller.signal);
    } catch (err) {
      await sendResponse(socket, this.render(err, req)).catch(() => socket.destroy());
    } finally {
      this.pending.delete(socket);
      socket.off("close", gone);
    }
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, signal: AbortSignal): Promise<void> {
    const { deps } = this.options;
    if (this.closing) {
      deps.metrics.resolution("not-serving");
      throw new Refusal("not-serving");
    }
    const request = webRequestOf(req);
    if (!request) throw new PinboardError(400, "bad request");
    const url = new URL(request.url);
    const path = this.dataPath(url);
    if (!path) throw notFound();
    if (!isWellFormedHandshake(req)) {
      // The `ws` server answers a malformed handshake with its own 400/405/426.
      this.wss.handleUpgrade(req, socket, head, (ws) => ws.close(1002));
      return;
    }

    const plan = await planForward(deps, request, url, path, req.socket.remoteAddress ?? "", this.affinityKey);
    const placed = await this.placer.place({ request, plan, protocols: requestedProtocols(req) ?? [], signal });
    switch (placed.kind) {
      case "reply":
        await sendResponse(socket, placed.response);
        return;
      case "relay":
        await relayResponse(socket, placed.response.statusCode ?? 502, placed.headers, placed.response);
        placed.ws.terminate();
        placed.release();
        return;
      case "open":
        this.complete(req, socket, head, placed);
        return;
    }
  }

  /** The worker said 101: answer the client's handshake the same way and pipe the two. */
  private complete(req: IncomingMessage, socket: Duplex, head: Buffer, placed: Extract<Placed, { kind: "open" }>): void {
    const { deps } = this.options;
    const upstream = placed.ws;
    let client: WebSocket | undefined;
    if (!this.closing && !socket.destroyed && socket.writable) {
      this.chosen.set(req, { protocol: upstream.protocol, lines: relayedUpgradeHeaders(placed.headers) });
      // Synchronous without verifyClient: the callback has run (or the socket was dropped) on return.
      this.wss.handleUpgrade(req, socket, head, (ws) => (client = ws));
      this.chosen.delete(req);
    }
    if (!client) {
      // The client went away while the worker was accepting: tell the worker, then free the slot.
      upstream.once("close", placed.release);
      upstream.on("error", () => {});
      upstream.resume();
      upstream.close(1001, "client went away");
      return;
    }

    deps.metrics.connections(1);
    const pipe = pipeSockets(client, upstream, (side, err) => deps.log.debug("websocket error", { side, error: err.message }));
    this.pipes.add(pipe);
    void pipe.done.then(() => {
      this.pipes.delete(pipe);
      placed.release();
      deps.metrics.connections(-1);
    });
  }

  /** `{basePath}/{ns}/{id}{rest}`, but never /registry/* (the registry's routes, not a namespace). */
  private dataPath({ pathname }: URL): DataPath | null {
    const { basePath } = this.options.deps.config;
    const inner = pathname.startsWith(basePath) ? pathname.slice(basePath.length) : "";
    if (inner === "/registry" || inner.startsWith("/registry/")) return null;
    return parseDataPath(pathname, basePath);
  }

  private render(err: unknown, req: IncomingMessage): Response {
    if (err instanceof PinboardError) return errorResponse(err.status === 404 ? notFound() : err);
    this.options.deps.log.error("unhandled error", {
      method: req.method,
      path: req.url,
      error: err instanceof Error ? (err.stack ?? err.message) : String(err),
    });
    return errorResponse(PinboardError.of(500, "internal error"));
  }
}

/** The worker's 101 headers the client also gets: filtered like any response, handshake fields left to `ws`. */
function relayedUpgradeHeaders(headers: IncomingHttpHeaders): string[] {
  const lines: string[] = [];
  forwardResponseHeaders(headersOf(headers)).forEach((value, name) => {
    if (!name.startsWith("sec-websocket-") && name !== "content-length") lines.push(`${name}: ${value}`);
  });
  return lines;
}
