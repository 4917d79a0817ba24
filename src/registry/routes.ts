import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { notFound } from "../errors/pinboard-error.ts";
import { readJsonBody } from "../http/json-body.ts";
import { requireScope, requireServing, tagAccount } from "./access.ts";
import { deregister } from "./deregister.ts";
import { heartbeat } from "./heartbeat.ts";
import { register } from "./register.ts";
import { release, tag } from "./release.ts";
import { deregisterBody, heartbeatBody, registerBody, releaseBody, tagBody } from "./schemas.ts";

/**
 * The /registry/* routes. Order for each: Passport (401/403), then the serving check (503),
 * then the body (413/400), then the route. The operator routes (src/operator/) and
 * registryFallback mount after these.
 */
export function registryRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const worker = [requireScope(deps, "pinboard:worker"), requireServing(deps), tagAccount(deps)] as const;

  app.post("/registry/register", ...worker, async (c) =>
    c.json(await register(deps, c.var.principal, c.var.accountTag, await readJsonBody(c, registerBody))),
  );
  app.post("/registry/heartbeat", ...worker, async (c) =>
    c.json(await heartbeat(deps, c.var.principal, c.var.accountTag, await readJsonBody(c, heartbeatBody))),
  );
  app.post("/registry/release", ...worker, async (c) =>
    c.json(await release(deps, c.var.principal, c.var.accountTag, await readJsonBody(c, releaseBody))),
  );
  app.post("/registry/tag", ...worker, async (c) =>
    c.json(await tag(deps, c.var.principal, c.var.accountTag, await readJsonBody(c, tagBody))),
  );
  app.post("/registry/deregister", ...worker, async (c) => {
    const { sessionId } = await readJsonBody(c, deregisterBody);
    return c.json(await deregister(deps, c.var.principal, c.var.accountTag, sessionId));
  });

  return app;
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
