import { Hono } from "hono";
import { isUnrestricted } from "../auth/claims.ts";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { forbidden } from "../errors/pinboard-error.ts";
import { readJsonBody } from "../http/json-body.ts";
import { requireScope, requireServing } from "../registry/guards.ts";
import { actorOf } from "./audit-actor.ts";
import { parseAuditQuery } from "./audit-query.ts";
import { auditPage } from "./audit-read.ts";
import { drain, undrain } from "./drain.ts";
import { fleetStats } from "./fleet-stats.ts";
import { runningEjections, visibleWorkers } from "./fleet-view.ts";
import { healthReport } from "./health-report.ts";
import { overview, parseOverviewFilters } from "./overview.ts";
import { parsePlacementQuery, placementStory } from "./placement-story.ts";
import { AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING, ReadGate } from "./read-gate.ts";
import { drainBody, undrainBody, windDownBody } from "./schemas.ts";
import { publicWorker } from "./scope.ts";
import { spreadReader } from "./spread.ts";
import { windDown } from "./wind-down-placements.ts";

/**
 * The operator routes (pinboard:operator). /registry/health and /registry/history (node-local)
 * answer while booting or draining; the rest pass the serving check. /registry/history, every
 * tenant's traffic, needs the policy /metrics needs ("*" namespaces, hostnames and envs open). They judge the credential's
 * namespace, hostname and env claims, never its account.
 */
export function operatorRoutes(deps: AppDeps): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  const operator = requireScope(deps, "pinboard:operator");
  const serving = requireServing(deps);

  app.get("/registry/health", operator, async (c) => c.json(await healthReport(deps)));
  // The history counts every tenant's traffic through this node and is kept whole, not per
  // namespace: like /metrics, only a credential that sees the whole fleet reads it.
  app.get("/registry/history", operator, (c) => {
    if (!isUnrestricted(c.var.principal.pinboard)) throw forbidden();
    return c.json(deps.history.snapshot());
  });
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
  app.get("/registry/placement", operator, serving, async (c) =>
    c.json(await placementStory(deps, c.var.principal.pinboard, parsePlacementQuery(c.req.query()))),
  );
  const spread = spreadReader(deps);
  app.get("/registry/spread", operator, serving, async (c) => c.json(await spread(c.var.principal.pinboard)));
  const auditReads = new ReadGate(AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING, "audit reads busy, retry");
  app.get("/registry/audit", operator, serving, async (c) => {
    const query = parseAuditQuery(c.req.query());
    return c.json(await auditReads.run(() => auditPage(deps, c.var.principal.pinboard, query)));
  });
  // The actions are recorded in the audit trail by the operations, with the caller's actorOf.
  app.post("/registry/wind_down", operator, serving, async (c) =>
    c.json(await windDown(deps, c.var.principal.pinboard, actorOf(c), await readJsonBody(c, windDownBody))),
  );
  app.post("/registry/drain", operator, serving, async (c) => {
    const body = await readJsonBody(c, drainBody);
    return c.json(await drain(deps, c.var.principal.pinboard, actorOf(c), body.clientId, body.deadline));
  });
  app.post("/registry/undrain", operator, serving, async (c) => {
    const body = await readJsonBody(c, undrainBody);
    return c.json(await undrain(deps, c.var.principal.pinboard, actorOf(c), body.clientId));
  });
  return app;
}
