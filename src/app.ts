import { Hono } from "hono";
import type { AppDeps, AppEnv } from "./deps.ts";
import { PinboardError, errorResponse, notFound, renderError } from "./errors.ts";
import { healthRoutes } from "./health.ts";
import { registryRoutes } from "./registry/routes.ts";

export type { AppDeps } from "./deps.ts";

export interface AppExtensions {
  /** The data plane (ANY {basePath}/{ns}/{id}{rest}); mounted after the registry. */
  dataPlane?: Hono<AppEnv>;
}

/**
 * Builds the Pinboard app from explicit dependencies. It never reads `process` nor imports
 * `node:*`, so the same app runs on workerd and on Node. Everything lives under the base path;
 * the Node entry adds /metrics outside it.
 */
export function createApp(deps: AppDeps, extensions: AppExtensions = {}): Hono<AppEnv> {
  const inner = new Hono<AppEnv>();
  inner.route("/", healthRoutes(deps));
  inner.route("/", registryRoutes(deps));
  if (extensions.dataPlane) inner.route("/", extensions.dataPlane);

  const app = new Hono<AppEnv>();
  app.route(deps.config.basePath || "/", inner);
  app.notFound(() => errorResponse(notFound()));
  app.onError((err, c) => renderError(err, c, deps.log));
  return app;
}

export { PinboardError };
