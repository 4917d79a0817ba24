import type { PinboardClaim } from "../auth/claims.ts";
import type { AppDeps } from "../deps.ts";
import { forbidden } from "../errors.ts";
import { mirrorEverywhere } from "../registry/mirror.ts";
import { parseRecord } from "../registry/record.ts";
import { readSession } from "../registry/sessions.ts";
import { applyDrain } from "./lua/index.ts";
import { visibleNamespaces } from "./scope.ts";

/** What this module uses of the app's dependencies. */
export type DrainDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/** A timed drain's key outlives its deadline by this much, so late heartbeats still see it. */
export const DRAIN_KEY_GRACE_MS = 7 * 24 * 3600 * 1000;

/**
 * The client a drain names, when the credential covers its whole current registration
 * (namespaces, hostname, envs); else 403 forbidden, like an unknown client.
 */
async function drainableClient(deps: DrainDeps, claim: PinboardClaim, clientId: string): Promise<void> {
  // The client map and the records change together (one script), so a record missing behind the
  // map means the client re-registered between the two reads: read the map again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const owner = await deps.redis.hget(deps.keys.clientOwners, clientId);
    if (owner === null) break;
    const record = await readSession(deps, owner.slice(owner.indexOf("\n") + 1));
    if (!record) continue;
    if (visibleNamespaces(claim, record, deps.config.hostnameAware).length !== record.namespaces.length) break;
    return;
  }
  throw forbidden();
}

async function writeDrain(deps: DrainDeps, clientId: string, value: string, ttlMs: number): Promise<boolean> {
  const { existed, json } = await applyDrain(deps.redis, deps.keys, { clientId, value, ttlMs });
  if (json !== "") await mirrorEverywhere(deps, parseRecord(json), json);
  return existed;
}

/**
 * POST /registry/drain: null cordons (no new placements, no deadline); a number forces release
 * at now + max(deadline × 1000, leaseTtl), when the worker's lease ends. Applied to the record at
 * once and reported to the worker by its next heartbeat (draining, drainDeadline).
 */
export async function drain(
  deps: DrainDeps,
  claim: PinboardClaim,
  clientId: string,
  deadline: number | null,
): Promise<{ drained: true }> {
  await drainableClient(deps, claim, clientId);
  if (deadline === null) {
    await writeDrain(deps, clientId, "cordon", 0);
  } else {
    const window = Math.max(deadline * 1000, deps.config.leaseTtlMs);
    await writeDrain(deps, clientId, String((await deps.redis.timeMs()) + window), window + DRAIN_KEY_GRACE_MS);
  }
  deps.log.info("client drained", { clientId, deadline });
  return { drained: true };
}

/** POST /registry/undrain: revokes the client's drain; revoked says whether there was one. */
export async function undrain(deps: DrainDeps, claim: PinboardClaim, clientId: string): Promise<{ revoked: boolean }> {
  await drainableClient(deps, claim, clientId);
  const revoked = await writeDrain(deps, clientId, "", 0);
  deps.log.info("client undrained", { clientId, revoked });
  return { revoked };
}
