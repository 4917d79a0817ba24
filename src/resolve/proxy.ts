import type { AppDeps } from "../deps.ts";
import { releaseRow, clearOverwritten } from "../redis/scripts/index.ts";
import { queueWindDown } from "../registry/control-queue.ts";
import { forwardOnce, type ForwardOutcome } from "./forward.ts";
import { forwardResponseHeaders, isActivationRefusal } from "./headers.ts";
import { InflightGate, onBodyDone } from "./inflight.ts";
import { Refusal } from "./outcomes.ts";
import { countsAsFailure, OutlierTracker } from "./outliers.ts";
import type { ForwardPlan } from "./plan.ts";
import { resolvePlacement, type Resolution } from "./resolver.ts";

/** A resolution older than this when its forward is about to leave is resolved again. */
export const STALE_RESOLUTION_MS = 5000;
const MAX_STALE_RETRIES = 2;

export interface ProxyRequest {
  request: Request;
  plan: ForwardPlan;
  /** Keeps work alive after the response (waitUntil on Workers). */
  defer: (work: Promise<unknown>) => void;
  /** Set once a worker's refusal was relayed as the answer (already counted as nack). */
  relayedRefusal?: boolean;
}

/**
 * The forwarding proxy: resolve, forward under the per-worker inflight cap, and handle what
 * comes back — an in-band refusal of a new activation (release, count nack, re-place once for
 * body-less requests), an unreachable worker (502, releasing a fresh placement that never
 * connected), a timeout (504), and the outlier and overwritten-marker bookkeeping.
 */
export class Proxy {
  readonly inflight: InflightGate;
  readonly outliers: OutlierTracker;

  constructor(private readonly deps: AppDeps) {
    this.inflight = new InflightGate(deps.config.maxInflight, (sid, v) => deps.metrics.inflight(sid, v));
    this.outliers = new OutlierTracker(deps);
  }

  async handle(req: ProxyRequest): Promise<Response> {
    try {
      const response = await this.attempt(req, undefined, 0);
      if (!req.relayedRefusal) this.deps.metrics.resolution("forward");
      return response;
    } catch (err) {
      // Every refusal by a worker was counted as nack when it came back.
      if (err instanceof Refusal && err.outcome !== "nack") this.deps.metrics.resolution(err.outcome);
      throw err;
    }
  }

  private async attempt(req: ProxyRequest, exclude: string | undefined, staleRetries: number): Promise<Response> {
    const { deps } = this;
    const { plan, request } = req;
    const resolution = await resolvePlacement(deps, { ...plan.resolve, ...(exclude ? { exclude } : {}) }, (fence) =>
      queueWindDown(deps, fence.ownerSessionId, plan.path.ns, plan.path.id, fence.deadlineAt).then(() => undefined),
    );
    if (resolution.fresh && resolution.survivingWindDown !== "") {
      req.defer(queueWindDown(deps, resolution.sessionId, plan.path.ns, plan.path.id, Number(resolution.survivingWindDown)));
    }
    if (deps.now() - resolution.resolvedAt > STALE_RESOLUTION_MS && staleRetries < MAX_STALE_RETRIES) {
      return this.attempt(req, exclude, staleRetries + 1);
    }

    const release = this.inflight.acquire(resolution.sessionId);
    const started = deps.now();
    let outcome: ForwardOutcome;
    try {
      outcome = await forwardOnce(
        { fetch: deps.fetch, forwardTimeoutMs: deps.config.forwardTimeoutMs, nowSeconds: () => Math.floor(deps.now() / 1000) },
        resolution,
        {
          request,
          pathAndQuery: `${plan.path.ns}/${plan.path.id}${plan.path.rest}${new URL(request.url).search}`,
          peer: plan.peer,
          body: exclude === undefined ? request.body : null,
          ...(plan.caller ? { caller: { from: plan.caller.from, depth: plan.caller.depth } } : {}),
          ...(plan.acct ? { acct: plan.acct } : {}),
          ...(isUpgrade(request) ? { upgrade: request.headers.get("upgrade")! } : {}),
        },
      );
    } catch (err) {
      release();
      throw err;
    }
    const seconds = (deps.now() - started) / 1000;

    if (outcome.kind !== "response") {
      release();
      return this.failed(req, resolution, outcome, seconds);
    }
    const { response } = outcome;
    if (isActivationRefusal(response.status, response.headers)) {
      release();
      return this.refused(req, resolution, response, exclude);
    }

    deps.metrics.forward(response.status, seconds);
    req.defer(countsAsFailure(response.status) ? this.outliers.failure(resolution.sessionId) : this.outliers.success(resolution.sessionId));
    if (response.status >= 200 && response.status < 300 && !isUpgrade(request) && resolution.overwritten !== "" && BigInt(resolution.overwritten) <= BigInt(resolution.epoch)) {
      req.defer(this.clearMarker(resolution, plan));
    }
    const ws = (response as Response & { webSocket?: unknown }).webSocket;
    if (ws) {
      release();
      return response;
    }
    return new Response(onBodyDone(response.body, release), {
      status: response.status,
      statusText: response.statusText,
      headers: forwardResponseHeaders(response.headers, { decoded: this.deps.runtime.name === "node" && response.headers.has("content-encoding") }),
    });
  }

  private async failed(req: ProxyRequest, resolution: Resolution, outcome: Exclude<ForwardOutcome, { kind: "response" }>, seconds: number): Promise<Response> {
    const { deps } = this;
    if (outcome.kind === "aborted") {
      if (resolution.fresh) await this.releasePlacement(req.plan, resolution);
      return new Response(null, { status: 502 });
    }
    req.defer(this.outliers.failure(resolution.sessionId));
    if (outcome.kind === "timeout") {
      deps.metrics.forward(504, seconds);
      return text(504, "upstream timeout");
    }
    deps.metrics.forward(502, seconds);
    deps.log.warn("forward failed", { sessionId: resolution.sessionId, reason: outcome.reason });
    if (resolution.fresh && !outcome.connected) await this.releasePlacement(req.plan, resolution);
    return text(502, "bad gateway");
  }

  private async refused(req: ProxyRequest, resolution: Resolution, response: Response, exclude: string | undefined): Promise<Response> {
    const { deps } = this;
    await this.releasePlacement(req.plan, resolution);
    deps.metrics.resolution("nack");
    const bodyless = isUpgrade(req.request) || !hasBody(req.request);
    if (!bodyless) {
      req.relayedRefusal = true;
      return new Response(response.body, { status: 503, headers: forwardResponseHeaders(response.headers) });
    }
    await response.body?.cancel().catch(() => {});
    if (exclude !== undefined) throw new Refusal("nack");
    try {
      return await this.attempt(req, resolution.sessionId, 0);
    } catch (err) {
      if (err instanceof Refusal && (err.outcome === "no-backends" || err.outcome === "no-hostname-workers")) throw new Refusal("nack");
      throw err;
    }
  }

  private async releasePlacement(plan: ForwardPlan, resolution: Resolution): Promise<void> {
    const { keys } = this.deps;
    await this.deps.redis.run(
      releaseRow,
      [keys.placements(resolution.bucket, plan.resolve.env, plan.path.ns)],
      [resolution.sessionId, plan.path.id, resolution.epoch],
    );
  }

  private async clearMarker(resolution: Resolution, plan: ForwardPlan): Promise<void> {
    const { keys } = this.deps;
    await this.deps.redis.run(
      clearOverwritten,
      [keys.overwritten(resolution.bucket)],
      [`${plan.resolve.env}\n${plan.path.ns}\n${plan.path.id}`, resolution.epoch],
    );
  }
}

export const isUpgrade = (request: Request): boolean => (request.headers.get("upgrade") ?? "") !== "";

function hasBody(request: Request): boolean {
  if (request.body === null) return false;
  const length = request.headers.get("content-length");
  return !(length === "0" && !request.headers.has("transfer-encoding"));
}

function text(status: number, body: string): Response {
  return new Response(body, { status, headers: { "content-type": "text/plain; charset=utf-8" } });
}
