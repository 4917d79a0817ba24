import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { notFound } from "../errors/pinboard-error.ts";
import { mountRoutes } from "../http/mount-routes.ts";
import { requireScope, requireServing, routeGuards, tagAccount } from "./access.ts";
import { deregister } from "./deregister.ts";
import { heartbeat } from "./heartbeat.ts";
import { register } from "./register.ts";
import { release, tag } from "./release.ts";
import { WORKER_ROUTES } from "./route-table.ts";

/**
 * The worker routes' handlers (declared in ./route-table.ts). Order for each: Passport (401/403),
 * then the serving check (503), then the account tag, then the body (413/400), then the handler.
 * The operator routes (src/operator/) and registryFallback mount after these.
 */
export function registryRoutes(deps: AppDeps): Hono<AppEnv> {
  return mountRoutes<typeof WORKER_ROUTES, AppEnv>(
    WORKER_ROUTES,
    {
      register: async (c, body) => register(deps, c.var.principal, c.var.accountTag, body),
      heartbeat: async (c, body) => heartbeat(deps, c.var.principal, c.var.accountTag, body),
      release: async (c, body) => release(deps, c.var.principal, c.var.accountTag, body),
      tag: async (c, body) => tag(deps, c.var.principal, c.var.accountTag, body),
      deregister: async (c, body) => deregister(deps, c.var.principal, c.var.accountTag, body.sessionId),
    },
    routeGuards(deps, tagAccount(deps)),
  );
}

/**
 * The registry's last routes: an unknown /registry path authenticates as a worker and passes the
 * serving check before its 404. Mounted after the operator routes, which share the prefix.
 */
export function registryFallback(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const worker = [requireScope(deps, "pinboard:worker"), requireServing(deps)] as const;
  app.all("/registry/*", ...worker, () => {
    throw notFound();
  });
  app.all("/registry", ...worker, () => {
    throw notFound();
  });
  return app;
}
