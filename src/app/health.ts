import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";

/**
 * GET /healthz (liveness, always 200 {"ok":true}) and GET /readyz (empty body; 200 only when
 * the node is not draining, holds the fleet license and passes membership, else 503).
 */
export function healthRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  app.get("/healthz", (c) => c.json({ ok: true }));
  app.get("/readyz", async (c) => {
    let ready = false;
    try {
      ready = await deps.fleet.ready();
    } catch {
      ready = false;
    }
    return c.body(null, ready ? 200 : 503);
  });
  return app;
}
