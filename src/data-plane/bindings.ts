import type { AppDeps } from "../deps.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../redis/keys.ts";
import { lookupBinding } from "../redis/scripts/index.ts";
import { Refusal } from "./outcomes.ts";

export interface Binding {
  hostname: string;
  env: string;
  takeover: "" | "wind_down" | "deny";
  quarantineUntil?: number;
}

const SINGLE: Binding = { hostname: SINGLE_HOSTNAME, env: SINGLE_ENV, takeover: "" };

/**
 * Where a request's (hostname, ns) lands. Single mode has one implicit env. In hostname-aware
 * mode the binding lookup runs before the script: no binding is no-hostname-workers, a binding
 * whose env has no takeover agreed is env-conflict. Single mode answers without an await.
 */
export function bindingFor(deps: AppDeps, hostname: string, ns: string): Binding | Promise<Binding> {
  return deps.config.hostnameAware ? lookup(deps, hostname, ns) : SINGLE;
}

async function lookup(deps: AppDeps, hostname: string, ns: string): Promise<Binding> {
  const { keys } = deps;
  const [env, takeover, until] = (await deps.redis.run(
    lookupBinding,
    [keys.hostnameBindings, keys.envBindings, keys.bindingQuarantine],
    [`${hostname}${ns}`],
  )) as [string, string, string];
  if (env === "") throw new Refusal("no-hostname-workers");
  if (takeover !== "wind_down" && takeover !== "deny") throw new Refusal("env-conflict");
  return { hostname, env, takeover, ...(until !== "" ? { quarantineUntil: Number(until) } : {}) };
}

/** The request's hostname: the Host header without its port, lowercased. */
export function requestHostname(host: string | undefined): string | null {
  if (!host) return null;
  const trimmed = host.trim().toLowerCase();
  if (trimmed.startsWith("[")) return trimmed.slice(0, trimmed.indexOf("]") + 1) || null;
  const colon = trimmed.lastIndexOf(":");
  const name = colon >= 0 ? trimmed.slice(0, colon) : trimmed;
  return name === "" ? null : name;
}
