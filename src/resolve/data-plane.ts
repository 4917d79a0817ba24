import { Hono, type Context } from "hono";
import type { AppDeps, AppEnv } from "../deps.ts";
import { PinboardError, errorResponse, notFound } from "../errors.ts";
import { clientIpAffinity, type AffinityKey } from "./affinity.ts";
import { planForward } from "./plan.ts";
import { Proxy, isUpgrade } from "./proxy.ts";
import { parseDataPath } from "./route.ts";
import { requestLink, type ClientLink } from "./worker-call.ts";

export interface DataPlaneOptions {
  /** The TCP peer of a request (the Node entry reads the socket; Workers a header). */
  peerAddress: (c: Context<AppEnv>) => string;
  /** The affinity key of new placements; defaults to the client address. */
  affinityKey?: AffinityKey;
  /** Whether the client is still there; defaults to the request's signal. */
  clientLink?: (c: Context<AppEnv>) => ClientLink;
}

/**
 * ANY {basePath}/{ns}/{id}{rest}{query}: mounted after the registry, it answers every other
 * path. A path naming no namespace is 404 unknown namespace (404 not found for an upgrade).
 */
export function dataPlaneRoutes(deps: AppDeps, options: DataPlaneOptions): { app: Hono<AppEnv>; proxy: Proxy } {
  const app = new Hono<AppEnv>();
  const proxy = new Proxy(deps);
  const affinityKey = options.affinityKey ?? clientIpAffinity;
  const clientLink = options.clientLink ?? ((c: Context<AppEnv>) => requestLink(c.req.raw));

  app.all("*", async (c) => {
    const request = c.req.raw;
    const url = new URL(request.url);
    const path = parseDataPath(url.pathname, deps.config.basePath);
    if (!path) throw isUpgrade(request) ? notFound() : notFound("unknown namespace");
    try {
      const plan = await planForward(deps, request, url, path, options.peerAddress(c), affinityKey);
      return await proxy.handle({ request, client: clientLink(c), plan, defer: (work) => defer(c, deps, work) });
    } catch (err) {
      if (err instanceof PinboardError && err.status === 404 && isUpgrade(request)) return errorResponse(notFound());
      throw err;
    }
  });
  return { app, proxy };
}

function defer(c: Context<AppEnv>, deps: AppDeps, work: Promise<unknown>): void {
  const guarded = work.catch((err: unknown) => deps.log.warn("background work failed", { error: err instanceof Error ? err.message : String(err) }));
  // Only Workers has an execution context (Hono's getter throws elsewhere); on Node the promise runs on.
  if (deps.runtime.name === "workers") c.executionCtx.waitUntil(guarded);
}
