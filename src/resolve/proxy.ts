import type { AppDeps } from "../deps.ts";
import { forwardOnce } from "./forward.ts";
import { forwardResponseHeaders, forwardResponseRecord, isActivationRefusal, isWebSocketUpgrade } from "./headers.ts";
import { InflightGate, onBodyDone } from "./inflight.ts";
import { completeBody, isUndecoded, rawHeadersOf } from "./transport-marks.ts";
import { OutlierTracker } from "./outliers.ts";
import type { ForwardPlan } from "./plan.ts";
import { PlacementLoop, type Delivery, type Transport } from "./placement-loop.ts";
import type { Resolution } from "./resolver.ts";
import type { ClientLink } from "./worker-call.ts";

export { STALE_RESOLUTION_MS } from "./placement-loop.ts";

export interface ProxyRequest {
  request: Request;
  client: ClientLink;
  plan: ForwardPlan;
  /** Keeps work alive after the response (waitUntil on Workers). */
  defer: (work: Promise<unknown>) => void;
}

/**
 * The HTTP forwarding proxy: the shared placement loop with fetch as the transport. Bodies
 * stream both ways; the inflight slot is held until the response body is done. An upgrade on
 * Workers comes back as a Response carrying `webSocket` and is returned as is.
 */
export class Proxy {
  readonly inflight: InflightGate;
  readonly outliers: OutlierTracker;
  readonly loop: PlacementLoop;

  constructor(private readonly deps: AppDeps) {
    this.inflight = new InflightGate(deps.config.maxInflight, (sid, v) => deps.metrics.inflight(sid, v));
    this.outliers = new OutlierTracker(deps);
    this.loop = new PlacementLoop(deps, this.inflight, this.outliers);
  }

  handle(req: ProxyRequest): Promise<Response> {
    return this.loop.run(req.plan, this.transport(req));
  }

  private transport({ request, client, plan, defer }: ProxyRequest): Transport<Response> {
    const { deps } = this;
    const upgrade = isUpgrade(request);
    const replayableBody = hasBody(request);
    const replayable = upgrade || !replayableBody;
    return {
      clearsMarker: !upgrade,
      defer,
      reply: (status, body) =>
        new Response(body, { status, ...(body === null ? {} : { headers: { "content-type": "text/plain; charset=utf-8" } }) }),
      async send(resolution: Resolution, release, retry): Promise<Delivery<Response>> {
        const outcome = await forwardOnce(
          { callWorker: deps.callWorker, forwardTimeoutMs: deps.config.forwardTimeoutMs, nowSeconds: () => Math.floor(deps.now() / 1000) },
          resolution,
          {
            request,
            url: plan.url,
            client,
            pathAndQuery: `${plan.path.ns}/${plan.path.id}${plan.path.rest}${plan.url.search}`,
            peer: plan.peer,
            trustedPeer: plan.trustedPeer,
            body: retry || !replayableBody ? null : request.body,
            ...(plan.caller ? { caller: { from: plan.caller.from, depth: plan.caller.depth } } : {}),
            ...(plan.acct ? { acct: plan.acct } : {}),
            ...(upgrade ? { upgrade: "websocket" } : {}),
          },
        );
        if (outcome.kind !== "response") return outcome;
        const { response } = outcome;
        if (response.status < 200 && !(upgrade && (response as Response & { webSocket?: unknown }).webSocket)) {
          // A 101 to a request that asked for no upgrade (or a WebSocket the runtime did not hand
          // over) is no answer a client can be given.
          await response.body?.cancel().catch(() => {});
          return { kind: "unreachable", connected: true, reason: `worker answered ${response.status} to a request without an upgrade` };
        }
        if (response.status === 503 && isActivationRefusal(response.status, response.headers)) {
          if (!replayable) return { kind: "refused", relay: new Response(response.body, { status: 503, headers: forwardResponseHeaders(response.headers) }) };
          await response.body?.cancel().catch(() => {});
          return { kind: "refused", relay: null };
        }
        if ((response as Response & { webSocket?: unknown }).webSocket) {
          release();
          return { kind: "answered", status: response.status, result: response };
        }
        const complete = completeBody(response);
        const raw = rawHeadersOf(response);
        if (complete !== undefined && raw !== undefined) {
          // The worker has answered in full: its slot is free, and neither the bytes nor the
          // headers need a web object. (No statusText or .headers: reading either makes the Node
          // adapter build a full Response.)
          release();
          const headers = forwardResponseRecord(raw) as unknown as Record<string, string>;
          return { kind: "answered", status: response.status, result: new Response(complete, { status: response.status, headers }) };
        }
        // undici decodes content-encoding; a transport that passes bodies through marks them.
        const decoded = deps.runtime.name === "node" && !isUndecoded(response) && response.headers.has("content-encoding");
        const headers = forwardResponseHeaders(response.headers, { decoded });
        const init = { status: response.status, statusText: response.statusText, headers };
        return { kind: "answered", status: response.status, result: new Response(onBodyDone(response.body, release), init) };
      },
    };
  }
}

/** A WebSocket upgrade (isWebSocketUpgrade); a bare or non-WebSocket Upgrade is a plain request. */
export const isUpgrade = (request: Request): boolean => isWebSocketUpgrade(request.headers.get("connection"), request.headers.get("upgrade"));

/**
 * Judged from the method and headers alone: touching `request.body` makes the Node adapter
 * build a stream, which a GET on the hot path should not pay for.
 */
function hasBody(request: Request): boolean {
  if (request.headers.has("transfer-encoding")) return true;
  const length = request.headers.get("content-length");
  if (length !== null) return length !== "0";
  return request.method !== "GET" && request.method !== "HEAD" && request.body !== null;
}
