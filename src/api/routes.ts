import { Hono } from "hono";
import { PINBOARD_VERSION } from "../contract/version.ts";
import type { AppEnv } from "../deps/app-deps.ts";
import { openApiDocument } from "./openapi.ts";

/**
 * GET /openapi.json, without a credential: the document is built on the first request and kept,
 * so the routes' hot paths never pay for it.
 */
export function apiDescriptionRoutes(basePath: string): Hono<AppEnv> {
  const app = new Hono<AppEnv>();
  let document: string | undefined;
  app.get("/openapi.json", (c) => {
    document ??= JSON.stringify(openApiDocument({ basePath, version: PINBOARD_VERSION }));
    return c.body(document, 200, { "content-type": "application/json", "cache-control": "public, max-age=300" });
  });
  return app;
}
