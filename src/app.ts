import { Hono, type Context } from "hono";
import type { AppDeps, AppEnv } from "./deps.ts";
import { PinboardError, errorResponse, notFound, renderError } from "./errors.ts";
import { apiDescriptionRoutes } from "./api/routes.ts";
import { consoleRoutes } from "./console/routes.ts";
import { healthRoutes } from "./health.ts";
import { registryRoutes } from "./registry/routes.ts";
import type { AffinityKey } from "./data-plane/affinity.ts";
import { DataPlane } from "./data-plane/data-plane.ts";
import { dataPlaneRoute } from "./data-plane/hono-route.ts";

export type { AppDeps } from "./deps.ts";

export interface AppOptions {
  /** The TCP peer of a request on the Hono route; defaults to CF-Connecting-IP (what Workers sees). */
  peerAddress?: (c: Context<AppEnv>) => string;
  /** The affinity key of new placements; defaults to the client address. */
  affinityKey?: AffinityKey;
  /** Routes outside the base path, matched first (the Node entry's /metrics). */
  rootRoutes?: (app: Hono<AppEnv>) => void;
}

export interface PinboardApp {
  /** Health, the registry and the data plane over fetch. */
  app: Hono<AppEnv>;
  /** The data plane itself, for an entry that serves it on its own objects (Node). */
  dataPlane: DataPlane;
}

const workersPeer = (c: Context<AppEnv>): string => c.req.header("cf-connecting-ip") ?? "";

/**
 * Builds the Pinboard app from explicit dependencies. It never reads `process` nor imports
 * `node:*`, so the same app runs on workerd and on Node. Everything lives under the base path
 * (health, /openapi.json, /console, the registry, then the data plane for every other path); the
 * Node entry adds /metrics outside it.
 */
export function createPinboard(deps: AppDeps, options: AppOptions = {}): PinboardApp {
  const dataPlane = new DataPlane(deps, options.affinityKey ? { affinityKey: options.affinityKey } : {});
  const inner = new Hono<AppEnv>();
  inner.route("/", healthRoutes(deps));
  inner.route("/", apiDescriptionRoutes(deps.config.basePath));
  inner.route("/", consoleRoutes());
  inner.route("/", registryRoutes(deps));
  inner.route("/", dataPlaneRoute(deps, dataPlane, options.peerAddress ?? workersPeer));

  const app = new Hono<AppEnv>();
  options.rootRoutes?.(app);
  app.route(deps.config.basePath || "/", inner);
  app.notFound(() => errorResponse(notFound()));
  app.onError((err, c) => renderError(err, c, deps.log));
  return { app, dataPlane };
}

export { PinboardError };
