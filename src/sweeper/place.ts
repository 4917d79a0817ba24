import type { AppDeps } from "../deps.ts";
import { bindingFor } from "../resolve/bindings.ts";
import { resolvePlacement, type Resolution } from "../resolve/resolver.ts";

/**
 * Places (or finds) an instance for the sweeper, as a body-less request without affinity would:
 * in hostname-aware mode the hostname is the resurrection target and the env comes from its
 * binding. Refusals (cold start, no backends, …) throw Refusal like on the data plane.
 */
export async function placeForSweep(deps: AppDeps, target: { ns: string; id: string; hostname: string }): Promise<Resolution> {
  const binding = await bindingFor(deps, target.hostname, target.ns);
  return resolvePlacement(deps, {
    ns: target.ns,
    id: target.id,
    env: binding.env,
    hostname: binding.hostname,
    takeover: binding.takeover,
    ...(binding.quarantineUntil !== undefined ? { bindingQuarantineUntil: binding.quarantineUntil } : {}),
  });
}
