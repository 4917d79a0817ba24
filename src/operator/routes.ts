import { Hono } from "hono";
import type { AppDeps, AppEnv } from "../deps.ts";
import { readJsonBody } from "../http/json-body.ts";
import { requireScope, requireServing } from "../registry/guards.ts";
import { drain, undrain } from "./drain.ts";
import { fleetStats } from "./fleet-stats.ts";
import { runningEjections, visibleWorkers } from "./fleet-view.ts";
import { healthReport } from "./health-report.ts";
import { overview, parseOverviewFilters } from "./overview.ts";
import { drainBody, undrainBody, windDownBody } from "./schemas.ts";
import { publicWorker } from "./scope.ts";
import { windDown } from "./wind-down-placements.ts";

/**
 * The operator routes (pinboard:operator). /registry/health answers while booting or draining;
 * the rest pass the serving check. They judge the credential's namespace, hostname and env
 * claims, never its account.
 */
export function operatorRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const operator = requireScope(deps, "pinboard:operator");
  const serving = requireServing(deps);

  app.get("/registry/health", operator, async (c) => c.json(await healthReport(deps)));
  app.get("/registry/workers", operator, serving, async (c) => {
    const { now, workers } = await visibleWorkers(deps, c.var.principal.pinboard);
    const ejected = await runningEjections(deps, now);
    return c.json({
      workers: workers.map((w) =>
        publicWorker(w.record, w.namespaces, deps.config.hostnameAware, ejected.get(w.record.sessionId)),
      ),
    });
  });
  app.get("/registry/overview", operator, serving, async (c) =>
    c.json(await overview(deps, c.var.principal.pinboard, parseOverviewFilters(c.req.query()))),
  );
  app.get("/registry/stats", operator, serving, async (c) => c.json(await fleetStats(deps, c.var.principal.pinboard)));
  app.post("/registry/wind_down", operator, serving, async (c) =>
    c.json(await windDown(deps, c.var.principal.pinboard, await readJsonBody(c, windDownBody))),
  );
  app.post("/registry/drain", operator, serving, async (c) => {
    const body = await readJsonBody(c, drainBody);
    return c.json(await drain(deps, c.var.principal.pinboard, body.clientId, body.deadline));
  });
  app.post("/registry/undrain", operator, serving, async (c) => {
    const body = await readJsonBody(c, undrainBody);
    return c.json(await undrain(deps, c.var.principal.pinboard, body.clientId));
  });
  return app;
}
