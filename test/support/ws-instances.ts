import type { Instance, InstanceContext, PinnedWebSocket, RequestContext } from "../../src/pinned/index.ts";

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });

/** WsProbe's greeting on an accepted socket: what reached the worker. */
export interface WsProbeHello {
  hello: true;
  /** The upgrade request's headers by lower-case name. */
  headers: Record<string, string>;
  path: string;
  query: string;
  epoch: string;
  aud: string;
}

export interface SeenClose {
  ns: string;
  id: string;
  code: number;
  reason: string;
}

/**
 * A WebSocket probe for the proxy tests. `?status=N` answers the upgrade with N instead; otherwise
 * it is accepted (after `?sleep=ms`, to let a forward time out) and greeted with what reached the worker: headers, path, query, epoch and the
 * attestation's audience. Then:
 *   binary frame           → echoed as binary
 *   "close {code} {reason}" → the instance closes the socket with that code and reason
 *   any other text          → echoed as text
 * Every close the instance sees is recorded in `WsProbe.closes` (the workers run in the test's
 * process). A plain GET answers { sockets }.
 */
export class WsProbe implements Instance {
  static readonly closes: SeenClose[] = [];

  constructor(readonly ctx: InstanceContext) {}

  async fetch(request: Request, ctx: RequestContext): Promise<Response> {
    const url = new URL(request.url);
    if (request.headers.get("upgrade")?.toLowerCase() !== "websocket")
      return json({ sockets: ctx.getWebSockets().length });
    const status = Number(url.searchParams.get("status") ?? 0);
    if (status > 0)
      return new Response("refused", {
        status,
        headers: { "x-probe": "1", "pinboard-leak": "no", "retry-after": "7" },
      });
    const sleep = Number(url.searchParams.get("sleep") ?? 0);
    if (sleep > 0) await new Promise((r) => setTimeout(r, sleep));
    const { socket, response } = ctx.acceptWebSocket(request);
    const headers: Record<string, string> = {};
    request.headers.forEach((v, k) => {
      headers[k] = v;
    });
    const hello: WsProbeHello = {
      hello: true,
      headers,
      path: ctx.path,
      query: url.search,
      epoch: ctx.epoch,
      aud: ctx.attestation.aud,
    };
    socket.send(JSON.stringify(hello));
    return response;
  }

  webSocketMessage(socket: PinnedWebSocket, message: string | ArrayBuffer): void {
    const close = typeof message === "string" ? /^close (\d+) ?(.*)$/.exec(message) : null;
    if (close) socket.close(Number(close[1]), close[2]);
    else socket.send(message);
  }

  webSocketClose(_socket: PinnedWebSocket, code: number, reason: string, ctx: InstanceContext): void {
    WsProbe.closes.push({ ns: ctx.ns, id: ctx.id, code, reason });
  }
}
