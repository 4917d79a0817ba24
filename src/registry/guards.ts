import type { MiddlewareHandler } from "hono";
import type { PassportScope } from "../auth/passport.ts";
import type { AppDeps, AppEnv } from "../deps.ts";
import type { GuardsOf } from "../http/mount-routes.ts";

/** What this module uses of the app's dependencies. */
export type GuardsDeps = Pick<AppDeps, "passport" | "fleet" | "accounts">;

/** Passport for a registry route: 401 without a valid credential, 403 without the scope. */
export function requireScope(deps: GuardsDeps, scope: PassportScope): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("principal", await deps.passport.authenticate(c.req.header("authorization"), scope));
    await next();
  };
}

/** Every /registry/* route but /registry/health: 503 not the serving fleet while not serving. */
export function requireServing(deps: GuardsDeps): MiddlewareHandler<AppEnv> {
  return async (_c, next) => {
    await deps.fleet.assertServing();
    await next();
  };
}

/**
 * The worker routes' account tag (auth/account-tags.ts), computed once per request, after the
 * credential is checked: what the route compares with, and writes in place of, the account.
 */
export function tagAccount(deps: GuardsDeps): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    c.set("accountTag", await deps.accounts.tag(c.var.principal.account));
    await next();
  };
}

/**
 * The guards of a declared route: Passport for its credential, the serving check when it is
 * serving-only, then `after` (the worker routes' tagAccount).
 */
export function routeGuards(deps: GuardsDeps, ...after: MiddlewareHandler<AppEnv>[]): GuardsOf {
  return (declaration) => [
    ...(declaration.credential === "none" ? [] : [requireScope(deps, declaration.credential)]),
    ...(declaration.servingOnly ? [requireServing(deps)] : []),
    ...after,
  ];
}
