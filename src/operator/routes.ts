import type { Hono } from "hono";
import { isUnrestricted } from "../auth/claims.ts";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import { forbidden } from "../errors/pinboard-error.ts";
import { mountRoutes } from "../http/mount-routes.ts";
import { routeGuards } from "../registry/access.ts";
import { actorOf } from "./audit-actor.ts";
import { parseAuditQuery } from "./audit-query.ts";
import { auditPage } from "./audit-read.ts";
import type { AuditReply } from "./audit-reply.ts";
import { drain, undrain } from "./drain.ts";
import { fleetStats } from "./fleet-stats.ts";
import { runningEjections, visibleWorkers } from "./fleet-view.ts";
import { healthReport } from "./health-report.ts";
import { overview, parseOverviewFilters } from "./overview.ts";
import { parsePlacementQuery, placementStory } from "./placement-story.ts";
import { AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING, ReadGate } from "./read-gate.ts";
import { OPERATOR_ROUTES } from "./route-table.ts";
import { publicWorkerOf } from "./scope.ts";
import { spreadReader } from "./spread.ts";
import { windDown } from "./wind-down-placements.ts";

/**
 * The operator routes (pinboard:operator). /registry/health and /registry/history (node-local)
 * answer while booting or draining; the rest pass the serving check. /registry/history, every
 * tenant's traffic, needs the policy /metrics needs ("*" namespaces, hostnames and envs open). They judge the credential's
 * namespace, hostname and env claims, never its account.
 */
export function operatorRoutes(deps: AppDeps): Hono<AppEnv> {
  const spread = spreadReader(deps);
  const auditReads = new ReadGate(AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING, "audit reads busy, retry");
  return mountRoutes<typeof OPERATOR_ROUTES, AppEnv>(
    OPERATOR_ROUTES,
    {
      health: async () => healthReport(deps),
      // The history counts every tenant's traffic through this node and is kept whole, not per
      // namespace: like /metrics, only a credential that sees the whole fleet reads it.
      history: (c) => {
        if (!isUnrestricted(c.var.principal.pinboard)) throw forbidden();
        return deps.history.snapshot();
      },
      workers: async (c) => {
        const { now, workers } = await visibleWorkers(deps, c.var.principal.pinboard);
        const ejected = await runningEjections(deps, now);
        return {
          workers: workers.map((w) =>
            publicWorkerOf(w.record, w.namespaces, deps.config.hostnameAware, ejected.get(w.record.sessionId)),
          ),
        };
      },
      overview: async (c) => overview(deps, c.var.principal.pinboard, parseOverviewFilters(c.req.query())),
      stats: async (c) => fleetStats(deps, c.var.principal.pinboard),
      placement: async (c) => placementStory(deps, c.var.principal.pinboard, parsePlacementQuery(c.req.query())),
      spread: async (c) => spread(c.var.principal.pinboard),
      audit: async (c) => {
        const query = parseAuditQuery(c.req.query());
        // The trail holds entries as the audit writers (src/audit) build them: auditReply's shapes.
        return (await auditReads.run(() => auditPage(deps, c.var.principal.pinboard, query))) as AuditReply;
      },
      // The actions are recorded in the audit trail by the operations, with the caller's actorOf.
      windDown: async (c, body) => windDown(deps, c.var.principal.pinboard, actorOf(c), body),
      drain: async (c, body) => drain(deps, c.var.principal.pinboard, actorOf(c), body.clientId, body.deadline),
      undrain: async (c, body) => undrain(deps, c.var.principal.pinboard, actorOf(c), body.clientId),
    },
    routeGuards(deps),
  );
}
