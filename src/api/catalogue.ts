import type { z } from "zod";
import { CONSOLE_ROUTES, DESCRIPTION_ROUTES, HEALTH_ROUTES } from "../http/open-routes.ts";
import type { ErrorAnswer, RouteDeclaration } from "../http/route-declaration.ts";
import { OPERATOR_ROUTES } from "../operator/route-table.ts";
import { WORKER_ROUTES } from "../registry/route-table.ts";

/**
 * Every route Pinboard serves under its base path, gathered from the route tables of each domain
 * (src/registry/route-table.ts, src/operator/route-table.ts, src/http/open-routes.ts). /openapi.json
 * is built from this list, and a test checks that it names every route the app registers.
 */
export const ROUTES: readonly RouteDeclaration[] = [
  ...Object.values(HEALTH_ROUTES),
  ...Object.values(DESCRIPTION_ROUTES),
  ...Object.values(CONSOLE_ROUTES),
  ...Object.values(WORKER_ROUTES),
  ...Object.values(OPERATOR_ROUTES),
];

/** The reply schema of each JSON route, by "METHOD /path" ("POST /registry/tag"). */
export const ROUTE_REPLY: Readonly<Record<string, z.ZodType>> = Object.fromEntries(
  ROUTES.filter((r) => r.reply !== undefined).map((r) => [`${r.method.toUpperCase()} ${r.path}`, r.reply!]),
);

/** What every guarded route may answer besides its own errors. */
export function sharedErrors(route: RouteDeclaration): ErrorAnswer[] {
  if (route.credential === "none") return [];
  const out: ErrorAnswer[] = [
    { status: 401, errors: ["unauthorized"], when: "no valid Passport credential" },
    {
      status: 403,
      errors: ["forbidden"],
      when: `a credential without the ${route.credential} scope, or with a malformed pinboard claim`,
    },
  ];
  if (route.body) {
    out.push({ status: 413, errors: ["body too large"], when: "a JSON body over the route's limit" });
    out.push({
      status: 400,
      errors: ["invalid json", route.body.expected],
      when: "a body that does not parse, or fails the route's schema",
    });
  }
  if (route.servingOnly)
    out.push({ status: 503, errors: ["not the serving fleet"], when: "this node is not serving (Retry-After: 1)" });
  return out;
}
