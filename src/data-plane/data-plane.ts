import type { AppDeps } from "../deps/app-deps.ts";
import { errorAnswer, notFound, PinboardError } from "../errors/pinboard-error.ts";
import { type AffinityKey, clientIpAffinity } from "../placement/affinity.ts";
import { InflightGate } from "../placement/inflight.ts";
import { OutlierTracker } from "../placement/outliers.ts";
import { isDataPlanePath, parseDataPath } from "./data-path.ts";
import { framingRefused } from "./framing.ts";
import type { InboundRequest } from "./inbound.ts";
import { PlacementLoop } from "./placement-loop.ts";
import { planForward } from "./plan.ts";
import type { Transport } from "./transport.ts";

export { STALE_RESOLUTION_MS } from "./placement-loop.ts";

/**
 * ANY {basePath}/{ns}/{id}{rest}{query}, on any runtime and for both kinds of request (HTTP and
 * WebSocket upgrades): the path, the plan (serving check, caller attestation or data-plane
 * passport, binding, scope, affinity), then the placement loop over the runtime's transport.
 * Every error, from any step, is answered through the one error handler. The inflight gate and
 * the outlier tracker are this node's, shared by every request whatever its transport.
 */
export class DataPlane {
  readonly inflight: InflightGate;
  readonly outliers: OutlierTracker;
  readonly loop: PlacementLoop;
  private readonly affinityKey: AffinityKey;

  constructor(
    private readonly deps: AppDeps,
    options: { affinityKey?: AffinityKey } = {},
  ) {
    this.inflight = new InflightGate(deps.config.maxInflight);
    deps.metrics.watchInflight(() => this.inflight.entries());
    this.outliers = new OutlierTracker(deps);
    this.loop = new PlacementLoop(deps, this.inflight, this.outliers);
    this.affinityKey = options.affinityKey ?? clientIpAffinity;
  }

  /**
   * Serves one request. A path naming no namespace is 404 unknown namespace, and every 404 of an
   * upgrade is 404 not found (an upgrade to /registry/* included).
   */
  async serve<T>(request: InboundRequest, transport: Transport<T>): Promise<T> {
    const { deps } = this;
    try {
      if (request.framing.kind === "refused") throw framingRefused(request.framing.reason);
      const path = isDataPlanePath(request.pathname, deps.config.basePath)
        ? parseDataPath(request.pathname, deps.config.basePath)
        : null;
      if (!path) throw notFound("unknown namespace");
      const plan = await planForward(deps, request, path, this.affinityKey);
      return await this.loop.run(plan, request, transport);
    } catch (err) {
      const answered = request.upgrade && err instanceof PinboardError && err.status === 404 ? notFound() : err;
      return transport.reply(errorAnswer(answered, { method: request.method, path: request.pathname }, deps.log));
    }
  }
}
