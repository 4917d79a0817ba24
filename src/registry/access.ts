import type { MiddlewareHandler } from "hono";
import type { PassportScope } from "../auth/passport.ts";
import type { AppDeps, AppEnv } from "../deps/app-deps.ts";
import type { GuardsOf } from "../http/mount-routes.ts";

/**
 * Who may call a registry route, and when: the middleware that checks the credential's scope,
 * that this node serves the fleet, and tags the caller's account.
 */

/** What this module uses of the app's dependencies. */
export type AccessDeps = Pick<AppDeps, "passport" | "fleet" | "accounts">;

/** Passport for a registry route: 401 without a valid credential, 403 without the scope. */
export function requireScope(deps: AccessDeps, scope: PassportScope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("principal", await deps.passport.authenticate(c.req.header("authorization"), scope));
    await next();
  };
}

/** Every /registry/* route but /registry/health: 503 not the serving fleet while not serving. */
export function requireServing(deps: AccessDeps): MiddlewareHandler<AppEnv> {
  return async (_c, next) => {
    await deps.fleet.assertServing();
    await next();
  };
}

/**
 * The worker routes' account tag (auth/account-tags.ts), computed once per request, after the
 * credential is checked: what the route compares with, and writes in place of, the account.
 */
export function tagAccount(deps: AccessDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("accountTag", await deps.accounts.tag(c.var.principal.account));
    await next();
  };
}

/**
 * The guards of a declared route: Passport for its credential, the serving check when it is
 * serving-only, then `after` (the worker routes' tagAccount).
 */
export function routeGuards(deps: AccessDeps, ...after: MiddlewareHandler<AppEnv>[]): GuardsOf<AppEnv> {
  return (declaration) => [
    ...(declaration.credential === "none" ? [] : [requireScope(deps, declaration.credential)]),
    ...(declaration.servingOnly ? [requireServing(deps)] : []),
    ...after,
  ];
}
