import type { Hono } from "hono";
import { isUnrestricted } from "../../../auth/claims.ts";
import type { AppDeps, AppEnv } from "../../../deps/app-deps.ts";
import { forbidden, PinboardError } from "../../../errors/pinboard-error.ts";
import type { PrometheusMetrics } from "./metrics.ts";

/** Where GET /metrics takes its text from: a prom-client Registry has this shape. */
export interface MetricsSource {
  metrics(): Promise<string>;
  readonly contentType: string;
}

/**
 * GET /metrics, outside the base path: Prometheus text for an operator credential whose policy
 * carries "*" namespaces and unrestricted hostnames and envs (403 otherwise); a failing
 * collection is 500 metrics collection failed. The text is this process's registry, or `source`
 * (with PINBOARD_PROCESSES > 1, the aggregate of every process: src/runtime/node/metrics/cluster-metrics.ts).
 */
export function mountMetricsRoute(
  app: Hono<AppEnv>,
  deps: AppDeps,
  metrics: PrometheusMetrics,
  source: MetricsSource = metrics.registry,
): void {
  app.get("/metrics", async (c) => {
    const principal = await deps.passport.authenticate(c.req.header("authorization"), "pinboard:operator");
    if (!isUnrestricted(principal.pinboard)) throw forbidden();
    let text: string;
    try {
      text = await source.metrics();
    } catch (err) {
      deps.log.error("metrics collection failed", { error: err instanceof Error ? err.message : String(err) });
      throw PinboardError.of(500, "metrics collection failed");
    }
    return c.body(text, 200, { "content-type": source.contentType });
  });
}
