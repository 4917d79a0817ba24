import type { IncomingMessage, RequestListener, Server } from "node:http";
import type { Duplex } from "node:stream";
import { isDataPlanePath, parseDataPath } from "../../../data-plane/data-path.ts";
import type { DataPlane } from "../../../data-plane/data-plane.ts";
import type { AppDeps } from "../../../deps/app-deps.ts";
import { answerOf, PinboardError } from "../../../errors/pinboard-error.ts";
import { Refusal } from "../../../placement/refusal.ts";
import { answerClientError } from "./client-error.ts";
import { socketLink } from "./client-link.ts";
import { isWebSocketRequest, isWellFormedHandshake } from "./handshake.ts";
import { NodeHttpTransport } from "./http-transport.ts";
import { nodeInbound, requestTarget } from "./incoming.ts";
import { writeRawAnswer } from "./raw-answer.ts";
import { replayAsPlainRequest } from "./upgrade-replay.ts";
import { NodeUpgradeTransport } from "./upgrade-transport.ts";

export interface NodeDataPlaneOptions {
  deps: AppDeps;
  dataPlane: DataPlane;
  /** Everything that is not the data plane: health, the registry, /metrics (the Hono app). */
  fallback: RequestListener;
  /** The URL host of a request without Host (the listen address, as the Hono adapter uses). */
  defaultHost: string;
}

/**
 * The Node entry's front: data-plane requests are served on node:http's own objects (the core's
 * DataPlane over NodeHttpTransport), WebSocket upgrades through the same DataPlane over
 * NodeUpgradeTransport, and every other path goes to the Hono app. An upgrade to anything but a
 * WebSocket is no upgrade at all: it goes back to the server as a plain request.
 */
export class NodeDataPlane {
  private readonly http: NodeHttpTransport;
  private readonly upgrades: NodeUpgradeTransport;
  /** Upgrades not yet answered, cut on shutdown. */
  private readonly pending = new Set<Duplex>();

  constructor(private readonly options: NodeDataPlaneOptions) {
    const { log } = options.deps;
    this.http = new NodeHttpTransport((err) =>
      log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) }),
    );
    this.upgrades = new NodeUpgradeTransport(options.deps);
  }

  /** The server's request listener. */
  readonly listener: RequestListener = (req, res) => {
    const { deps, dataPlane, fallback, defaultHost } = this.options;
    const target = requestTarget(req, defaultHost);
    if (target === null || !isDataPlanePath(target.pathname, deps.config.basePath)) {
      fallback(req, res);
      return;
    }
    const client = socketLink(req.socket, res);
    void dataPlane.serve(nodeInbound(req, target, client), this.http.for(req, res, client)).catch(() => res.destroy());
  };

  /**
   * Becomes the server's only 'upgrade' listener (the Hono adapter must not add its own), and
   * answers what node:http's parser refuses as the data plane would (client-error.ts).
   */
  attach(server: Pick<Server, "on" | "listenerCount" | "emit">): void {
    if (server.listenerCount("upgrade") > 0)
      throw new Error("the server already handles upgrades; the data plane must be its only 'upgrade' listener");
    server.on("clientError", answerClientError);
    server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
      if (isWebSocketRequest(req)) this.upgrade(req, socket, head);
      else replayAsPlainRequest(server, req, socket, head);
    });
  }

  /** Closes every proxied WebSocket with 1001, cuts handshakes in progress and the worker pool. */
  async close(): Promise<void> {
    const closing = this.upgrades.close();
    for (const socket of this.pending) socket.destroy();
    await closing;
    this.http.close();
  }

  private upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const { deps, dataPlane, defaultHost } = this.options;
    socket.on("error", () => {});
    if (this.upgrades.shuttingDown) {
      deps.metrics.resolution("not-serving");
      writeRawAnswer(socket, answerOf(new Refusal("not-serving")));
      return;
    }
    const target = requestTarget(req, defaultHost);
    if (target === null) {
      writeRawAnswer(socket, answerOf(PinboardError.of(400, "bad request")));
      return;
    }
    if (this.namesInstance(target.pathname) && !isWellFormedHandshake(req)) {
      this.upgrades.refuseMalformed(req, socket, head);
      return;
    }
    const client = socketLink(socket);
    this.pending.add(socket);
    void dataPlane
      .serve(nodeInbound(req, target, client), this.upgrades.for(req, socket, head, client))
      .catch(() => socket.destroy())
      .finally(() => this.pending.delete(socket));
  }

  /** Whether the path names an instance (the data plane answers every other path 404 or 400 itself). */
  private namesInstance(pathname: string): boolean {
    const { basePath } = this.options.deps.config;
    if (!isDataPlanePath(pathname, basePath)) return false;
    try {
      return parseDataPath(pathname, basePath) !== null;
    } catch {
      return false;
    }
  }
}
