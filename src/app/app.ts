import { type Context, Hono } from "hono";
import { apiDescriptionRoutes } from "../api/routes.ts";
import { consoleRoutes } from "../console/routes.ts";
import { DataPlane } from "../data-plane/data-plane.ts";
import { dataPlaneRoute } from "../data-plane/fetch-route.ts";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { errorResponse, notFound, PinboardError, renderError } from "../errors/pinboard-error.ts";
import { operatorRoutes } from "../operator/routes.ts";
import type { AffinityKey } from "../placement/affinity.ts";
import { registryFallback, registryRoutes } from "../registry/routes.ts";
import { healthRoutes } from "./health.ts";
import { requireReserved } from "./own-routes.ts";

export type { AppDeps } from "../deps/app-deps.ts";

export interface AppOptions {
  /**
   * The TCP peer of a request on the Hono route: what replaces X-Forwarded-For on forwards and
   * keys client-IP affinity (with PINBOARD_TRUSTED_PROXIES). Required: on Workers it is
   * `cloudflarePeer` (CF-Connecting-IP, set by Cloudflare's edge); anywhere else it must come
   * from the transport (the socket's address), never from a header a client can send.
   */
  peerAddress: (c: Context<AppEnv>) => string;
  /** The affinity key of new placements; defaults to the client address. */
  affinityKey?: AffinityKey;
  /** Routes outside the base path, matched first (the Node entry's /metrics); admin routes. */
  rootRoutes?: (app: Hono<AppEnv>) => void;
  /**
   * Serve the operator surface apart (`admin`): /openapi.json, /console, /registry/* and
   * `rootRoutes`, for a listener or hostname of its own, so no worker page shares the console's
   * origin. `app` then keeps health and the data plane only. Both serve /healthz and /readyz.
   */
  separateAdmin?: boolean;
}

export interface PinboardApp {
  /** Health, the registry and the data plane over fetch (without the registry when separateAdmin). */
  app: Hono<AppEnv>;
  /** With separateAdmin: health, /openapi.json, /console, the registry and rootRoutes. */
  admin?: Hono<AppEnv>;
  /** The data plane itself, for an entry that serves it on its own objects (Node). */
  dataPlane: DataPlane;
}

/**
 * Builds the Pinboard app from explicit dependencies. It never reads `process` nor imports
 * `node:*`, so the same app runs on workerd and on Node. Everything lives under the base path
 * (health, /openapi.json, /console, the registry, then the data plane for every other path); the
 * Node entry adds /metrics outside it. With `separateAdmin` the operator surface is a second app.
 * Every app built must keep its own first path segments reserved (src/app/own-routes.ts).
 */
export function createPinboard(deps: AppDeps, options: AppOptions): PinboardApp {
  const dataPlane = new DataPlane(deps, options.affinityKey ? { affinityKey: options.affinityKey } : {});
  const operator = () => [
    apiDescriptionRoutes(deps.config.basePath),
    consoleRoutes(),
    registryRoutes(deps),
    operatorRoutes(deps),
    registryFallback(deps),
  ];
  const data = dataPlaneRoute(deps, dataPlane, options.peerAddress);
  if (!options.separateAdmin) {
    return { app: rooted(deps, [healthRoutes(deps), ...operator(), data], options.rootRoutes), dataPlane };
  }
  return {
    app: rooted(deps, [healthRoutes(deps), data]),
    admin: rooted(deps, [healthRoutes(deps), ...operator()], options.rootRoutes),
    dataPlane,
  };
}

/** The parts under the base path, `rootRoutes` outside it, one not-found and one error handler. */
function rooted(deps: AppDeps, parts: Hono<AppEnv>[], rootRoutes?: (app: Hono<AppEnv>) => void): Hono<AppEnv> {
  const inner = new Hono<AppEnv>();
  for (const part of parts) inner.route("/", part);
  const app = new Hono<AppEnv>();
  rootRoutes?.(app);
  requireReserved([...app.routes, ...inner.routes].map((r) => r.path));
  app.route(deps.config.basePath || "/", inner);
  app.notFound(() => errorResponse(notFound()));
  app.onError((err, c) => renderError(err, c, deps.log));
  return app;
}

export { PinboardError };
