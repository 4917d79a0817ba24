import type { Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { mountRoutes } from "../http/mount-routes.ts";
import { HEALTH_ROUTES } from "../http/open-routes.ts";

/**
 * GET /healthz (liveness, always 200 {"ok":true}) and GET /readyz (empty body; 200 only when
 * the node is not draining, holds the fleet license and passes membership, else 503).
 */
export function healthRoutes(deps: AppDeps): Hono<AppEnv> {
  return mountRoutes<typeof HEALTH_ROUTES, AppEnv>(HEALTH_ROUTES, {
    healthz: () => ({ ok: true as const }),
    readyz: async (c) => {
      let ready = false;
      try {
        ready = await deps.fleet.ready();
      } catch {
        ready = false;
      }
      return c.body(null, ready ? 200 : 503);
    },
  });
}
