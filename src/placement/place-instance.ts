import type { AppDeps } from "../deps/app-deps.ts";
import { queueWindDown } from "../registry/control-queue.ts";
import { type Resolution, type ResolveRequest, resolvePlacement } from "./resolver.ts";
import { recordSpend } from "./spend-sync.ts";

/** What this module uses of the app's dependencies. */
export type PlaceInstanceDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "log" | "runtime" | "metrics" | "secrets"
>;

/**
 * The one placement path, used by the data plane (PlacementLoop) and by the sweeper (wakes,
 * alarms): runs the resolve script and keeps the wind-down fence's promises.
 *   - A takeover fence the script just set is queued to the row's owner as a wind_down before
 *     the refusal is thrown.
 *   - A fresh placement that inherited a wind-down fence (the previous owner died, or the row
 *     was a stamped placeholder) re-notifies its new owner: the fence survives worker death and
 *     re-notifies a replacement owner. That message is background work handed to `defer`
 *     (waitUntil on Workers; the sweeper awaits it).
 *   - A fresh placement is recorded for the spend sync (spend-sync.ts), which lets the other
 *     buckets' placement decisions see it within about 100 ms (on Workers through `defer`).
 * Refusals throw Refusal, as resolvePlacement does.
 */
export async function placeInstance(
  deps: PlaceInstanceDeps,
  req: ResolveRequest,
  defer: (work: Promise<unknown>) => void,
): Promise<Resolution> {
  const { ns, id } = req;
  const resolution = await resolvePlacement(deps, req, (fence) =>
    queueWindDown(deps, fence.ownerSessionId, ns, id, fence.deadlineAt).then(() => undefined),
  );
  if (resolution.fresh) recordSpend(deps, resolution.sessionId, resolution.bucket, defer);
  if (resolution.fresh && resolution.survivingWindDown !== "") {
    defer(queueWindDown(deps, resolution.sessionId, ns, id, Number(resolution.survivingWindDown)));
  }
  return resolution;
}
