import { parsePinboardClaim } from "../auth/claims.ts";
import { scopesOf } from "../auth/passport.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { forbidden, PinboardError } from "../errors/pinboard-error.ts";

/** What this module uses of the app's dependencies. */
export type DataPassportDeps = Pick<AppDeps, "config" | "passport">;

/** The `acct` attestation claim: who the data-plane credential says the client is. */
export interface AccountClaim {
  sub: string;
  scopes?: string[];
  claims: Record<string, unknown>;
}

const MOVED = new Set(["scope", "scopes", "pinboard"]);

/**
 * Data-plane passport, only when PINBOARD_DATA_PLANE_RULES names the namespace (or "*"): a
 * Bearer credential verified like Passport's, whose pinboard claim (when it carries one) covers
 * the namespace and whose scopes include one of the rule's (when the rule lists any). Requests
 * to namespaces without a rule pass untouched, without an await.
 */
export function dataPlanePassport(
  deps: DataPassportDeps,
  ns: string,
  authorization: string | undefined,
): Promise<AccountClaim> | undefined {
  const rules = deps.config.dataPlaneRules;
  const rule = rules?.[ns] ?? rules?.["*"];
  return rule ? verifiedAccount(deps, rule.scopes, ns, authorization) : undefined;
}

async function verifiedAccount(
  deps: DataPassportDeps,
  ruleScopes: string[],
  ns: string,
  authorization: string | undefined,
): Promise<AccountClaim> {
  if (!authorization) throw PinboardError.of(401, "authentication required");
  const payload = await deps.passport.verifyBearer(authorization);
  if (!payload || typeof payload.sub !== "string" || payload.sub === "")
    throw PinboardError.of(401, "invalid credential");

  if (payload.pinboard !== undefined) {
    const claim = parsePinboardClaim(payload.pinboard);
    if (!claim || !(claim.namespaces.includes("*") || claim.namespaces.includes(ns)))
      throw forbidden("namespace not allowed");
  }
  const scopes = scopesOf(payload);
  if (ruleScopes.length > 0 && !ruleScopes.some((s) => scopes.includes(s))) throw forbidden("insufficient scope");

  const claims: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(payload)) if (!MOVED.has(name)) claims[name] = value;
  const visible = scopes.filter((s) => !s.startsWith("pinboard:"));
  return { sub: payload.sub, ...(visible.length ? { scopes: visible } : {}), claims };
}
