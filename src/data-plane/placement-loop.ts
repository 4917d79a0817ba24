import type { AppDeps } from "../deps/app-deps.ts";
import { answerOf, textAnswer } from "../errors/pinboard-error.ts";
import { InflightGate } from "../placement/inflight.ts";
import { clearOverwritten } from "../placement/lua/index.ts";
import { countsAsFailure, type OutlierTracker } from "../placement/outliers.ts";
import { placeInstance } from "../placement/place-instance.ts";
import { Refusal } from "../placement/refusal.ts";
import type { Resolution } from "../placement/resolver.ts";
import { releaseRow } from "../registry/lua/index.ts";
import { attestedForwardHeaders, forwardTarget } from "./attested-headers.ts";
import { requestTimedOut } from "./client-upload.ts";
import { carriesBody } from "./framing.ts";
import type { InboundRequest } from "./inbound.ts";
import type { ForwardPlan } from "./plan.ts";
import type { Delivery, Forward, Relay, Transport } from "./transport.ts";

/** What this module uses of the app's dependencies. */
export type PlacementLoopDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "log" | "runtime" | "metrics" | "secrets"
>;

/** A resolution older than this when its forward is about to leave is resolved again. */
export const STALE_RESOLUTION_MS = 5000;
const MAX_STALE_RETRIES = 2;

/** One request going through the loop. */
interface Job<T> {
  plan: ForwardPlan;
  request: InboundRequest;
  transport: Transport<T>;
}

/**
 * The forwarding loop shared by HTTP and WebSocket forwards, on every transport: resolve (again
 * when stale), build the attested forward, send it under the per-worker cap (the inflight cap for
 * HTTP, the WebSocket cap for an upgrade, so open sockets never starve HTTP), and handle
 * what comes back: an in-band refusal of a new activation (release the row, count nack, re-place
 * once when the request can be replayed), an unreachable worker or a client gone (releasing a
 * fresh placement only when its forward never left: one that may have reached the worker stays,
 * or the next request would place the instance beside an activation), a timeout (504), and the
 * outlier and overwritten-marker bookkeeping.
 * Each request counts one resolution outcome; each refusal by a worker counts one nack.
 */
export class PlacementLoop {
  constructor(
    private readonly deps: PlacementLoopDeps,
    private readonly inflight: InflightGate,
    private readonly outliers: OutlierTracker,
    /** Open WebSockets per worker: an upgrade holds a slot here, never an inflight one. */
    readonly websockets = new InflightGate(deps.config.webSockets.maxPerWorker),
  ) {
    deps.metrics.watchWebSockets(() => this.websockets.entries());
  }

  async run<T>(plan: ForwardPlan, request: InboundRequest, transport: Transport<T>): Promise<T> {
    try {
      const { result, relayed } = await this.attempt({ plan, request, transport }, undefined, 0);
      if (!relayed) this.deps.metrics.resolution("forward");
      return result;
    } catch (err) {
      if (err instanceof Refusal && err.outcome !== "nack") this.deps.metrics.resolution(err.outcome);
      throw err;
    }
  }

  private async attempt<T>(
    job: Job<T>,
    exclude: string | undefined,
    stale: number,
  ): Promise<{ result: T; relayed: boolean }> {
    const { deps } = this;
    const { plan, transport } = job;
    const resolution = await placeInstance(deps, exclude ? { ...plan.resolve, exclude } : plan.resolve, (work) =>
      transport.defer(work),
    );
    if (deps.now() - resolution.resolvedAt > STALE_RESOLUTION_MS && stale < MAX_STALE_RETRIES) {
      return this.attempt(job, exclude, stale + 1);
    }

    let release: () => void;
    try {
      const gate = job.request.upgrade ? this.websockets : this.inflight;
      release = this.holdOpen(gate.acquire(resolution.sessionId), transport);
    } catch (err) {
      // A placement this request just made, whose forward will never leave: the client's retry
      // must be free to land elsewhere instead of on the same saturated worker.
      if (resolution.fresh) await this.releasePlacement(plan, resolution);
      throw err;
    }
    const started = deps.now();
    let delivery: Delivery<T>;
    try {
      delivery = job.request.client.gone
        ? { kind: "aborted", connected: false }
        : await transport.send(await this.forwardOf(job, resolution, exclude !== undefined), release);
    } catch (err) {
      release();
      throw err;
    }
    if (delivery.kind !== "answered" && !(delivery.kind === "refused" && delivery.relay !== null)) release();
    const seconds = (deps.now() - started) / 1000;

    switch (delivery.kind) {
      case "answered": {
        deps.metrics.forward(delivery.status, seconds, "worker");
        const sid = resolution.sessionId;
        const outlier = countsAsFailure(delivery.status) ? this.outliers.failure(sid) : this.outliers.success(sid);
        if (outlier) transport.defer(outlier);
        if (
          !job.request.upgrade &&
          delivery.status >= 200 &&
          delivery.status < 300 &&
          resolution.overwritten !== "" &&
          BigInt(resolution.overwritten) <= BigInt(resolution.epoch)
        ) {
          transport.defer(this.clearMarker(plan, resolution));
        }
        return { result: delivery.result, relayed: false };
      }
      case "refused":
        return this.refused(job, resolution, delivery.relay, exclude);
      case "aborted":
        if (resolution.fresh && !delivery.connected) await this.releasePlacement(plan, resolution);
        return { result: transport.reply(textAnswer(502, null)), relayed: false };
      case "client-timeout":
        // The client's fault: nothing counts against the worker. Its placement stays: the upload
        // was under way, so the worker has the request and may hold the instance at this epoch.
        return { result: transport.reply(answerOf(requestTimedOut())), relayed: false };
      case "timeout":
        transport.defer(this.outliers.failure(resolution.sessionId));
        deps.metrics.forward(504, seconds, "pinboard");
        return { result: transport.reply(textAnswer(504, "upstream timeout")), relayed: false };
      case "unreachable":
        if (!delivery.local) transport.defer(this.outliers.failure(resolution.sessionId));
        deps.metrics.forward(502, seconds, "pinboard");
        deps.log.warn("forward failed", { sessionId: resolution.sessionId, reason: delivery.reason });
        if (resolution.fresh && !delivery.connected) await this.releasePlacement(plan, resolution);
        return { result: transport.reply(textAnswer(502, "bad gateway")), relayed: false };
    }
  }

  private async refused<T>(job: Job<T>, resolution: Resolution, relay: Relay<T> | null, exclude: string | undefined) {
    try {
      await this.releasePlacement(job.plan, resolution);
    } catch (err) {
      relay?.drop();
      throw err;
    }
    this.deps.metrics.resolution("nack");
    if (relay !== null) return { result: relay.send(), relayed: true };
    if (exclude !== undefined) throw new Refusal("nack");
    try {
      return await this.attempt(job, resolution.sessionId, 0);
    } catch (err) {
      if (err instanceof Refusal && (err.outcome === "no-backends" || err.outcome === "no-hostname-workers"))
        throw new Refusal("nack");
      throw err;
    }
  }

  /**
   * On a request-bound runtime (Workers) a client that goes away cancels its request's promises
   * (an upload cut short, a body never read), and with them the code that would give the slot
   * back: the isolate's count would leak for good. Deferring a promise that settles with the
   * release keeps the request's work alive (waitUntil) until the slot is back, whatever the client
   * does. Where promises run on (Node) no such hold is needed.
   */
  private holdOpen<T>(release: () => void, transport: Transport<T>): () => void {
    if (this.deps.runtime.backgroundWork !== "request-bound") return release;
    let released!: () => void;
    transport.defer(new Promise<void>((resolve) => (released = resolve)));
    return () => {
      release();
      released();
    };
  }

  /** The send itself: the owner's URL and the attested headers, decided here for every transport. */
  private async forwardOf<T>({ plan, request }: Job<T>, resolution: Resolution, replaced: boolean): Promise<Forward> {
    const { config } = this.deps;
    const attested = () =>
      attestedForwardHeaders(resolution, plan, request, Math.floor(this.deps.now() / 1000), this.deps.runtime.signJws);
    return {
      advertiseUrl: resolution.advertiseUrl,
      pathAndQuery: forwardTarget(plan, request),
      method: request.method,
      headers: await attested(),
      reattested: attested,
      upgrade: request.upgrade,
      withBody: carriesBody(request.framing) && !replaced,
      framing: request.framing,
      // An upgrade or a body-less request can go again to another worker; a body cannot.
      relayRefusal: carriesBody(request.framing) && !request.upgrade,
      timeoutMs: config.forwardTimeoutMs,
      uploadTimeoutMs: config.listeners.requestTimeoutMs,
    };
  }

  /** Compare-and-delete of the row this resolution placed (its session and epoch). */
  private async releasePlacement(plan: ForwardPlan, resolution: Resolution): Promise<void> {
    const { keys } = this.deps;
    await releaseRow(this.deps.redis, keys, {
      bucket: resolution.bucket,
      env: plan.resolve.env,
      ns: plan.path.ns,
      sessionId: resolution.sessionId,
      id: plan.path.id,
      epoch: resolution.epoch,
    });
  }

  private async clearMarker(plan: ForwardPlan, resolution: Resolution): Promise<void> {
    const { keys } = this.deps;
    await clearOverwritten(this.deps.redis, keys, {
      bucket: resolution.bucket,
      env: plan.resolve.env,
      ns: plan.path.ns,
      id: plan.path.id,
      epoch: resolution.epoch,
    });
  }
}
