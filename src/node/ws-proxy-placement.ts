import type { IncomingHttpHeaders, IncomingMessage } from "node:http";
import type WebSocket from "ws";
import type { AppDeps } from "../deps.ts";
import { releaseRow } from "../redis/scripts/index.ts";
import { queueWindDown } from "../registry/control-queue.ts";
import { attestedForwardHeaders } from "../resolve/forward.ts";
import { forwardResponseHeaders, isActivationRefusal } from "../resolve/headers.ts";
import { Refusal } from "../resolve/outcomes.ts";
import { countsAsFailure } from "../resolve/outliers.ts";
import type { ForwardPlan } from "../resolve/plan.ts";
import { STALE_RESOLUTION_MS, type Proxy } from "../resolve/proxy.ts";
import { resolvePlacement, type Resolution } from "../resolve/resolver.ts";
import { headersOf } from "./ws-proxy-http.ts";
import { openUpstream, type UpstreamOutcome } from "./ws-proxy-upstream.ts";

/** As the HTTP proxy: a stale resolution is resolved again twice at most. */
const MAX_STALE_RETRIES = 2;

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
 * The HTTP proxy's forwarding loop for a WebSocket handshake (src/resolve/proxy.ts is the
 * reference; this follows it step for step): resolve, re-resolve a stale resolution, take a slot
 * of the shared inflight gate, open the worker's socket with the attested headers, and handle what
 * comes back — a refused activation (release the row, count nack, re-resolve once excluding that
 * session, as for every body-less request), an unreachable worker (502, releasing a fresh
 * placement that never connected), a timeout (504), and the outlier bookkeeping. Resolutions are
 * counted like the HTTP proxy counts them.
 */
export class WebSocketPlacer {
  constructor(
    private readonly deps: AppDeps,
    private readonly proxy: Proxy,
  ) {}

  async place(req: PlacementRequest): Promise<Placed> {
    try {
      const placed = await this.attempt(req, undefined, 0);
      this.deps.metrics.resolution("forward");
      return placed;
    } catch (err) {
      // Every refusal by a worker was counted as nack when it came back.
      if (err instanceof Refusal && err.outcome !== "nack") this.deps.metrics.resolution(err.outcome);
      throw err;
    }
  }

  private async attempt(req: PlacementRequest, exclude: string | undefined, staleRetries: number): Promise<Placed> {
    const { deps } = this;
    const { plan } = req;
    const resolution = await resolvePlacement(deps, { ...plan.resolve, ...(exclude ? { exclude } : {}) }, (fence) =>
      queueWindDown(deps, fence.ownerSessionId, plan.path.ns, plan.path.id, fence.deadlineAt).then(() => undefined),
    );
    if (resolution.fresh && resolution.survivingWindDown !== "") {
      this.defer(queueWindDown(deps, resolution.sessionId, plan.path.ns, plan.path.id, Number(resolution.survivingWindDown)));
    }
    if (deps.now() - resolution.resolvedAt > STALE_RESOLUTION_MS && staleRetries < MAX_STALE_RETRIES) {
      return this.attempt(req, exclude, staleRetries + 1);
    }

    const release = this.proxy.inflight.acquire(resolution.sessionId);
    const started = deps.now();
    let outcome: UpstreamOutcome;
    try {
      const headers = await attestedForwardHeaders(
        resolution,
        {
          request: req.request,
          peer: plan.peer,
          ...(plan.caller ? { caller: { from: plan.caller.from, depth: plan.caller.depth } } : {}),
          ...(plan.acct ? { acct: plan.acct } : {}),
        },
        Math.floor(deps.now() / 1000),
      );
      outcome = await openUpstream({
        url: `${resolution.advertiseUrl}${plan.path.ns}/${plan.path.id}${plan.path.rest}${new URL(req.request.url).search}`,
        headers: handshakeHeaders(headers),
        protocols: req.protocols,
        timeoutMs: deps.config.forwardTimeoutMs,
        signal: req.signal,
      });
    } catch (err) {
      release();
      throw err;
    }
    const seconds = (deps.now() - started) / 1000;

    switch (outcome.kind) {
      case "open":
        deps.metrics.forward(101, seconds);
        this.defer(this.proxy.outliers.success(resolution.sessionId));
        return { kind: "open", ws: outcome.ws, headers: outcome.headers, release };
      case "response": {
        const { ws, response } = outcome;
        const status = response.statusCode ?? 502;
        const headers = headersOf(response.headers);
        if (isActivationRefusal(status, headers)) {
          release();
          response.resume();
          ws.terminate();
          return this.refused(req, resolution, exclude);
        }
        deps.metrics.forward(status, seconds);
        this.defer(countsAsFailure(status) ? this.proxy.outliers.failure(resolution.sessionId) : this.proxy.outliers.success(resolution.sessionId));
        return { kind: "relay", ws, response, headers: forwardResponseHeaders(headers), release };
      }
      case "aborted":
        release();
        if (resolution.fresh && !outcome.connected) await this.releasePlacement(plan, resolution);
        return { kind: "reply", response: new Response(null, { status: 502 }) };
      case "timeout":
        release();
        this.defer(this.proxy.outliers.failure(resolution.sessionId));
        deps.metrics.forward(504, seconds);
        return { kind: "reply", response: text(504, "upstream timeout") };
      case "unreachable":
        release();
        this.defer(this.proxy.outliers.failure(resolution.sessionId));
        deps.metrics.forward(502, seconds);
        deps.log.warn("forward failed", { sessionId: resolution.sessionId, reason: outcome.reason });
        if (resolution.fresh && !outcome.connected) await this.releasePlacement(plan, resolution);
        return { kind: "reply", response: text(502, "bad gateway") };
    }
  }

  /** A refused activation: release, count nack, re-place once (an upgrade has no body). */
  private async refused(req: PlacementRequest, resolution: Resolution, exclude: string | undefined): Promise<Placed> {
    await this.releasePlacement(req.plan, resolution);
    this.deps.metrics.resolution("nack");
    if (exclude !== undefined) throw new Refusal("nack");
    try {
      return await this.attempt(req, resolution.sessionId, 0);
    } catch (err) {
      if (err instanceof Refusal && (err.outcome === "no-backends" || err.outcome === "no-hostname-workers")) throw new Refusal("nack");
      throw err;
    }
  }

  /** Compare-and-delete of the row this resolution placed (its session and epoch). */
  private async releasePlacement(plan: ForwardPlan, resolution: Resolution): Promise<void> {
    const { keys } = this.deps;
    await this.deps.redis.run(
      releaseRow,
      [keys.placements(resolution.bucket, plan.resolve.env, plan.path.ns)],
      [resolution.sessionId, plan.path.id, resolution.epoch],
    );
  }

  private defer(work: Promise<unknown>): void {
    void work.catch((err: unknown) => this.deps.log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) }));
  }
}

/** The attested, filtered forward headers as `ws` takes them, minus the handshake's own fields. */
function handshakeHeaders(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  headers.forEach((value, name) => {
    if (!HANDSHAKE_FIELDS.includes(name)) out[name] = value;
  });
  return out;
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
