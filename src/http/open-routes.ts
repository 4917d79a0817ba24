import { z } from "zod";
import type { RouteTable } from "./route-declaration.ts";

/**
 * The routes that need no credential and answer while this node is not serving: health, this
 * description and the console page. src/api/routes.ts serves /openapi.json, src/console/routes.ts the
 * page, src/app/health.ts the health routes.
 */

export const healthzReply = z.strictObject({ ok: z.literal(true) });
export const openApiReply = z.looseObject({ openapi: z.literal("3.1.0"), paths: z.record(z.string(), z.unknown()) });

export const HEALTH_ROUTES = {
  healthz: {
    method: "get",
    path: "/healthz",
    summary: "Liveness",
    tag: "health",
    credential: "none",
    reply: healthzReply,
    replyDescription: 'always `{"ok":true}`',
    errors: [],
    servingOnly: false,
  },
  readyz: {
    method: "get",
    path: "/readyz",
    summary: "Readiness: not draining, holding the fleet license, passing membership (503 otherwise, empty body)",
    tag: "health",
    credential: "none",
    replyDescription: "ready (empty body)",
    errors: [],
    servingOnly: false,
  },
} satisfies RouteTable;

export const DESCRIPTION_ROUTES = {
  openApi: {
    method: "get",
    path: "/openapi.json",
    summary: "This description: OpenAPI 3.1, built from the routes' own schemas",
    tag: "description",
    credential: "none",
    reply: openApiReply,
    replyDescription: "the document",
    errors: [],
    servingOnly: false,
  },
} satisfies RouteTable;

export const CONSOLE_ROUTES = {
  console: {
    method: "get",
    path: "/console",
    summary: "The operator console: one page that calls the operator routes with a pasted credential",
    tag: "console",
    credential: "none",
    replyDescription: "the page (text/html)",
    errors: [],
    servingOnly: false,
  },
} satisfies RouteTable;
