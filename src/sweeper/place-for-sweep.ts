import type { AppDeps } from "../deps/app-deps.ts";
import { bindingFor } from "../placement/bindings.ts";
import { placeInstance } from "../placement/place-instance.ts";
import type { Resolution } from "../placement/resolver.ts";
import { releaseRow } from "../registry/lua/index.ts";

/** What this module uses of the app's dependencies. */
export type PlaceForSweepDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "log" | "runtime" | "metrics" | "secrets"
>;

/** A sweeper's placement, with the env its row lives in. */
export type SweepPlacement = Resolution & { env: string };

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
): Promise<SweepPlacement> {
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
  return { ...placement, env: binding.env };
}

/**
 * The owner refused the activation in-band (503 + Pinned-Refusal: it drains, its lease is
 * unhealthy, or that epoch ended there): as the data plane does, the placement is released
 * (compare-and-delete on its session and epoch), so the next pass places the instance anew
 * instead of calling a worker that will refuse it again.
 */
export async function releaseRefused(
  deps: PlaceForSweepDeps,
  placement: SweepPlacement,
  target: { ns: string; id: string },
): Promise<void> {
  await releaseRow(deps.redis, deps.keys, {
    bucket: placement.bucket,
    env: placement.env,
    ns: target.ns,
    sessionId: placement.sessionId,
    id: target.id,
    epoch: placement.epoch,
  });
}
