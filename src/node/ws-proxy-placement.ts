import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type WebSocket from "ws";
import type { AppDeps } from "../deps.ts";
import { attestedForwardHeaders } from "../resolve/forward.ts";
import { forwardResponseHeaders, isActivationRefusal } from "../resolve/headers.ts";
import type { Delivery, Transport } from "../resolve/placement-loop.ts";
import type { ForwardPlan } from "../resolve/plan.ts";
import type { Proxy } from "../resolve/proxy.ts";
import type { Resolution } from "../resolve/resolver.ts";
import { headersOf } from "./ws-proxy-http.ts";
import { openUpstream } from "./ws-proxy-upstream.ts";

/** The handshake headers `ws` writes itself (a second copy would confuse the worker). */
const HANDSHAKE_FIELDS = ["sec-websocket-key", "sec-websocket-version", "sec-websocket-extensions", "sec-websocket-protocol", "sec-websocket-accept"];

export interface PlacementRequest {
  request: Request;
  plan: ForwardPlan;
  protocols: string[];
  /** Aborted when the client's socket closes. */
  signal: AbortSignal;
}

/** What to do with the client's socket. `release` frees the inflight slot (call it once done). */
export type Placed =
  | { kind: "open"; ws: WebSocket; headers: IncomingHttpHeaders; release: () => void }
  | { kind: "relay"; ws: WebSocket; response: IncomingMessage; headers: Headers; release: () => void }
  | { kind: "reply"; response: Response };

/**
 * A WebSocket handshake through the shared placement loop (src/resolve/placement-loop.ts): the
 * transport opens the worker's socket with the attested headers and reports a 101, another
 * answer, a refusal, or a failure; resolving, refusals, re-placement, inflight and outlier
 * bookkeeping are the loop's, exactly as for HTTP.
 */
export class WebSocketPlacer {
  constructor(
    private readonly deps: AppDeps,
    private readonly proxy: Proxy,
  ) {}

  place(req: PlacementRequest): Promise<Placed> {
    return this.proxy.loop.run(req.plan, this.transport(req));
  }

  private transport(req: PlacementRequest): Transport<Placed> {
    const { deps } = this;
    const { plan } = req;
    return {
      clearsMarker: false,
      defer: (work) => void work.catch((err: unknown) => deps.log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) })),
      reply: (status, body) =>
        ({ kind: "reply", response: new Response(body, { status, ...(body === null ? {} : { headers: { "content-type": "text/plain; charset=utf-8" } }) }) }) as Placed,
      async send(resolution: Resolution, release): Promise<Delivery<Placed>> {
        const headers = await attestedForwardHeaders(
          resolution,
          {
            request: req.request,
            url: plan.url,
            peer: plan.peer,
            trustedPeer: plan.trustedPeer,
            ...(plan.caller ? { caller: { from: plan.caller.from, depth: plan.caller.depth } } : {}),
            ...(plan.acct ? { acct: plan.acct } : {}),
          },
          Math.floor(deps.now() / 1000),
        );
        const outcome = await openUpstream({
          url: `${resolution.advertiseUrl}${plan.path.ns}/${plan.path.id}${plan.path.rest}${plan.url.search}`,
          headers: handshakeHeaders(headers),
          protocols: req.protocols,
          timeoutMs: deps.config.forwardTimeoutMs,
          signal: req.signal,
        });
        switch (outcome.kind) {
          case "open":
            return { kind: "answered", status: 101, result: { kind: "open", ws: outcome.ws, headers: outcome.headers, release } };
          case "response": {
            const status = outcome.response.statusCode ?? 502;
            const responseHeaders = headersOf(outcome.response.headers);
            if (isActivationRefusal(status, responseHeaders)) {
              outcome.response.resume();
              outcome.ws.terminate();
              return { kind: "refused", relay: null };
            }
            const relay: Placed = { kind: "relay", ws: outcome.ws, response: outcome.response, headers: forwardResponseHeaders(responseHeaders), release };
            return { kind: "answered", status, result: relay };
          }
          default:
            return outcome;
        }
      },
    };
  }
}

/** The attested, filtered forward headers as `ws` takes them, minus the handshake's own fields. */
function handshakeHeaders(headers: Record<string, string>): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const name of Object.keys(headers)) if (!HANDSHAKE_FIELDS.includes(name)) out[name] = headers[name]!;
  return out;
}
