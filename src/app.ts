import { Hono, type Context } from "hono";
import type { AppDeps, AppEnv } from "./deps.ts";
import { PinboardError, errorResponse, notFound, renderError } from "./errors.ts";
import { healthRoutes } from "./health.ts";
import { registryRoutes } from "./registry/routes.ts";
import type { AffinityKey } from "./resolve/affinity.ts";
import { dataPlaneRoutes } from "./resolve/data-plane.ts";
import type { Proxy } from "./resolve/proxy.ts";
import type { ClientLink } from "./resolve/worker-call.ts";

export type { AppDeps } from "./deps.ts";

export interface AppOptions {
  /** The TCP peer of a request; defaults to CF-Connecting-IP (what Workers sees). */
  peerAddress?: (c: Context<AppEnv>) => string;
  /** The affinity key of new placements; defaults to the client address. */
  affinityKey?: AffinityKey;
  /** Whether the client is still there; defaults to the request's signal (what Workers aborts). */
  clientLink?: (c: Context<AppEnv>) => ClientLink;
  /** Routes outside the base path, matched first (the Node entry's /metrics). */
  rootRoutes?: (app: Hono<AppEnv>) => void;
}

export interface PinboardApp {
  app: Hono<AppEnv>;
  proxy: Proxy;
}

const workersPeer = (c: Context<AppEnv>): string => c.req.header("cf-connecting-ip") ?? "";

/**
 * Builds the Pinboard app from explicit dependencies. It never reads `process` nor imports
 * `node:*`, so the same app runs on workerd and on Node. Everything lives under the base path
 * (health, registry, then the data plane for every other path); the Node entry adds /metrics
 * outside it.
 */
export function createPinboard(deps: AppDeps, options: AppOptions = {}): PinboardApp {
  const dataPlane = dataPlaneRoutes(deps, {
    peerAddress: options.peerAddress ?? workersPeer,
    ...(options.affinityKey ? { affinityKey: options.affinityKey } : {}),
    ...(options.clientLink ? { clientLink: options.clientLink } : {}),
  });
  const inner = new Hono<AppEnv>();
  inner.route("/", healthRoutes(deps));
  inner.route("/", registryRoutes(deps));
  inner.route("/", dataPlane.app);

  const app = new Hono<AppEnv>();
  options.rootRoutes?.(app);
  app.route(deps.config.basePath || "/", inner);
  app.notFound(() => errorResponse(notFound()));
  app.onError((err, c) => renderError(err, c, deps.log));
  return { app, proxy: dataPlane.proxy };
}

/** The Hono app alone, for callers that need no handle on the proxy. */
export function createApp(deps: AppDeps, options: AppOptions = {}): Hono<AppEnv> {
  return createPinboard(deps, options).app;
}

export { PinboardError };
