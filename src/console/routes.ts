import type { Hono } from "hono";
import type { AppEnv } from "../deps/app-deps.ts";
import { mountRoutes } from "../http/mount-routes.ts";
import { CONSOLE_ROUTES } from "../http/open-routes.ts";
import { CONSOLE_CSP, CONSOLE_HTML } from "./assets.generated.ts";

/**
 * GET /console: the operator console, one static page (built by `npm run build:console`). The
 * page itself needs no credential; everything it shows comes from the operator routes, called
 * with the credential the operator pastes into it.
 */
export function consoleRoutes(): Hono<AppEnv> {
  return mountRoutes<typeof CONSOLE_ROUTES, AppEnv>(CONSOLE_ROUTES, {
    console: (c) =>
      c.body(CONSOLE_HTML, 200, {
        "content-type": "text/html; charset=utf-8",
        "content-security-policy": CONSOLE_CSP,
        "x-content-type-options": "nosniff",
        "referrer-policy": "no-referrer",
        "cache-control": "no-cache",
      }),
  });
}
