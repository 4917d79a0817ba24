import type { AppDeps } from "../deps/app-deps.ts";
import { bindingFor } from "../placement/bindings.ts";
import { placeInstance } from "../placement/place-instance.ts";
import type { Resolution } from "../placement/resolver.ts";

/** What this module uses of the app's dependencies. */
export type PlaceForSweepDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "log" | "runtime" | "metrics" | "secrets"
>;

/**
 * Places (or finds) an instance for the sweeper, as a body-less request without affinity would:
 * in hostname-aware mode the hostname is the resurrection target and the env comes from its
 * binding. It takes the data plane's own placement path (placeInstance), so a takeover fence is
 * queued to its owner and a surviving wind-down fence re-notifies the replacement owner; that
 * message is queued before this returns, so the owner has it before the sweeper calls it.
 * Refusals (cold start, no backends, …) throw Refusal like on the data plane.
 */
export async function placeForSweep(
  deps: PlaceForSweepDeps,
  target: { ns: string; id: string; hostname: string },
): Promise<Resolution> {
  const binding = await bindingFor(deps, target.hostname, target.ns);
  const background: Promise<unknown>[] = [];
  const placement = await placeInstance(
    deps,
    {
      ns: target.ns,
      id: target.id,
      env: binding.env,
      hostname: binding.hostname,
      takeover: binding.takeover,
      ...(binding.quarantineUntil !== undefined ? { bindingQuarantineUntil: binding.quarantineUntil } : {}),
    },
    (work) => background.push(work),
  );
  await Promise.all(background);
  return placement;
}
