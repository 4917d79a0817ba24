import type { Hono } from "hono";
import { PINBOARD_VERSION } from "../contract/version.ts";
import type { AppEnv } from "../deps/app-deps.ts";
import { mountRoutes } from "../http/mount-routes.ts";
import { DESCRIPTION_ROUTES } from "../http/open-routes.ts";
import { openApiDocument } from "./openapi.ts";

/**
 * GET /openapi.json, without a credential: the document is built on the first request and kept,
 * so the routes' hot paths never pay for it.
 */
export function apiDescriptionRoutes(basePath: string): Hono<AppEnv> {
  let document: string | undefined;
  return mountRoutes<typeof DESCRIPTION_ROUTES, AppEnv>(DESCRIPTION_ROUTES, {
    openApi: (c) => {
      document ??= JSON.stringify(openApiDocument({ basePath, version: PINBOARD_VERSION }));
      return c.body(document, 200, { "content-type": "application/json", "cache-control": "public, max-age=300" });
    },
  });
}
