import type { AppDeps } from "../deps/app-deps.ts";
import { SINGLE_ENV, SINGLE_HOSTNAME } from "../redis/keys.ts";
import { lookupBinding } from "./lua/index.ts";
import { Refusal } from "./refusal.ts";

/** What this module uses of the app's dependencies. */
export type BindingsDeps = Pick<AppDeps, "config" | "redis" | "keys">;

export interface Binding {
  hostname: string;
  env: string;
  takeover: "" | "wind_down" | "deny";
  quarantineUntil?: number;
}

/** Single mode's one implicit binding. */
export const SINGLE_BINDING: Binding = { hostname: SINGLE_HOSTNAME, env: SINGLE_ENV, takeover: "" };

/** Where (hostname, ns) lands: single mode's one binding, or the hostname-aware lookup. */
export function bindingFor(deps: BindingsDeps, hostname: string, ns: string): Promise<Binding> {
  return deps.config.hostnameAware ? hostnameBinding(deps, hostname, ns) : Promise.resolve(SINGLE_BINDING);
}

/**
 * Where a request's (hostname, ns) lands in hostname-aware mode: the binding lookup runs before
 * the script. No binding is no-hostname-workers; a binding whose env has no takeover agreed is
 * env-conflict.
 */
export async function hostnameBinding(deps: BindingsDeps, hostname: string, ns: string): Promise<Binding> {
  const { env, takeover, quarantineUntil: until } = await lookupBinding(deps.redis, deps.keys, { hostname, ns });
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
