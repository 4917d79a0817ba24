import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type { Duplex } from "node:stream";
import { type WebSocket, WebSocketServer } from "ws";
import { isLeaseRefusal, REFUSAL_HEADER } from "../../../contract/header-names.ts";
import { forwardResponseRecord } from "../../../data-plane/header-hygiene.ts";
import type { ClientLink } from "../../../data-plane/inbound.ts";
import type { Delivery, Forward, Transport } from "../../../data-plane/transport.ts";
import type { AppDeps } from "../../../deps/app-deps.ts";
import { requestedProtocols } from "./handshake.ts";
import { relayRawAnswer, writeRawAnswer } from "./raw-answer.ts";
import { KeepAlive } from "./ws-keepalive.ts";
import { type Pipe, pipeSockets } from "./ws-pipe.ts";
import { openUpstream } from "./ws-upstream.ts";

const REFUSAL = REFUSAL_HEADER.toLowerCase();

/** The handshake headers `ws` writes itself (a second copy would confuse the worker). */
const HANDSHAKE_FIELDS = new Set([
  "sec-websocket-key",
  "sec-websocket-version",
  "sec-websocket-extensions",
  "sec-websocket-protocol",
  "sec-websocket-accept",
  "connection",
  "upgrade",
]);

/** How long close() lets proxied sockets finish their closing handshake before cutting them. */
const SHUTDOWN_GRACE_MS = 2000;

/**
 * The data plane's upgrade transport on the Node entry: a `ws` client opens the worker's socket
 * with the attested headers and, only once the worker has answered 101, a noServer `ws` server
 * completes the client's handshake the same way (the worker's subprotocol and its 101 headers)
 * and the two are piped (ws-pipe.ts). Any other answer of the worker is relayed on the raw socket;
 * Pinboard's own answers are written there too, as plain HTTP that closes the connection. Both
 * legs cap a message at PINBOARD_WS_MAX_MESSAGE_BYTES and are pinged (ws-keepalive.ts).
 */
export class NodeUpgradeTransport {
  private readonly wss: WebSocketServer;
  private readonly pipes = new Set<Pipe>();
  private readonly keepAlive: KeepAlive;
  /** Per handshake: the subprotocol the worker chose and the worker's 101 headers to pass on. */
  private readonly chosen = new WeakMap<IncomingMessage, { protocol: string; lines: string[] }>();
  private closing = false;

  constructor(private readonly deps: AppDeps) {
    this.keepAlive = new KeepAlive(deps.config.webSockets.pingIntervalMs);
    this.wss = new WebSocketServer({
      noServer: true,
      clientTracking: false,
      perMessageDeflate: false,
      autoPong: false,
      // A whole message (fragments summed) is held before it is relayed: this bounds it.
      maxPayload: deps.config.webSockets.maxMessageBytes,
      handleProtocols: (_offered, req) => this.chosen.get(req)?.protocol || false,
    });
    this.wss.on("headers", (lines, req) => {
      lines.push(...(this.chosen.get(req)?.lines ?? []));
    });
  }

  /** Lets `ws` answer a malformed handshake itself (400, 405 or 426): it never reaches a worker. */
  refuseMalformed(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    this.wss.handleUpgrade(req, socket, head, (ws) => ws.close(1002));
  }

  /** The transport of one upgrade request. */
  for(req: IncomingMessage, socket: Duplex, head: Buffer, client: ClientLink): Transport<void> {
    return {
      defer: (work) =>
        void work.catch((err: unknown) =>
          this.deps.log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) }),
        ),
      reply: (answer) => writeRawAnswer(socket, answer),
      send: (forward, release) => this.send(req, socket, head, client, forward, release),
    };
  }

  /** Closes every proxied socket with 1001 (both sides); new handshakes are refused from now on. */
  async close(): Promise<void> {
    this.closing = true;
    await Promise.all([...this.pipes].map((pipe) => pipe.shutdown(1001, "pinboard shutting down", SHUTDOWN_GRACE_MS)));
    this.keepAlive.stop();
  }

  get shuttingDown(): boolean {
    return this.closing;
  }

  private async send(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    client: ClientLink,
    forward: Forward,
    release: () => void,
  ): Promise<Delivery<void>> {
    const outcome = await openUpstream({
      url: `${forward.advertiseUrl}${forward.pathAndQuery}`,
      headers: handshakeHeaders(forward.headers),
      protocols: requestedProtocols(req) ?? [],
      timeoutMs: forward.timeoutMs,
      maxMessageBytes: this.deps.config.webSockets.maxMessageBytes,
      client,
    });
    switch (outcome.kind) {
      case "open":
        this.complete(req, socket, head, outcome.ws, outcome.headers, release);
        return { kind: "answered", status: 101, result: undefined };
      case "response": {
        const { response, ws } = outcome;
        const status = response.statusCode ?? 502;
        if (isLeaseRefusal(status, String(response.headers[REFUSAL] ?? ""))) {
          response.resume();
          ws.terminate();
          return { kind: "refused", relay: null };
        }
        void relayRawAnswer(socket, status, forwardResponseRecord(response.rawHeaders), response).then(() => {
          ws.terminate();
          release();
        });
        return { kind: "answered", status, result: undefined };
      }
      default:
        return outcome;
    }
  }

  /** The worker said 101: answer the client's handshake the same way and pipe the two. */
  private complete(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    upstream: WebSocket,
    headers: IncomingHttpHeaders,
    release: () => void,
  ): void {
    const { deps } = this;
    let client: WebSocket | undefined;
    if (!this.closing && !socket.destroyed && socket.writable) {
      this.chosen.set(req, { protocol: upstream.protocol, lines: relayedUpgradeHeaders(headers) });
      // Synchronous without verifyClient: the callback has run (or the socket was dropped) on return.
      this.wss.handleUpgrade(req, socket, head, (ws) => (client = ws));
      this.chosen.delete(req);
    }
    if (!client) {
      // The client went away while the worker was accepting: tell the worker, then free the slot.
      upstream.once("close", release);
      upstream.on("error", () => {});
      upstream.resume();
      upstream.close(1001, "client went away");
      return;
    }

    deps.metrics.connections(1);
    const pipe = pipeSockets(client, upstream, (side, err) =>
      deps.log.debug("websocket error", { side, error: err.message }),
    );
    this.pipes.add(pipe);
    this.keepAlive.watch(client);
    this.keepAlive.watch(upstream);
    void pipe.done.then(() => {
      this.pipes.delete(pipe);
      release();
      deps.metrics.connections(-1);
    });
  }
}

/** The attested, filtered forward headers as `ws` takes them, minus the handshake's own fields. */
function handshakeHeaders(headers: Record<string, string>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(headers)) if (!HANDSHAKE_FIELDS.has(name)) out[name] = headers[name]!;
  return out;
}

/** The worker's 101 headers the client also gets: filtered like any response, handshake fields left to `ws`. */
function relayedUpgradeHeaders(headers: IncomingHttpHeaders): string[] {
  const raw: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) raw.push(name, v);
  }
  const lines: string[] = [];
  const record = forwardResponseRecord(raw);
  for (const name of Object.keys(record)) {
    if (name.startsWith("sec-websocket-") || name === "content-length") continue;
    const value = record[name]!;
    for (const v of Array.isArray(value) ? value : [value]) lines.push(`${name}: ${v}`);
  }
  return lines;
}
