import type { AuditActor } from "../audit/entry.ts";
import { recordAudit } from "../audit/trail.ts";
import { workerTarget } from "../audit/worker-target.ts";
import type { PinboardClaim } from "../auth/claims.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { forbidden } from "../errors/pinboard-error.ts";
import { mirrorEverywhere } from "../registry/mirror.ts";
import { parseRecord, type WorkerRecord } from "../registry/record.ts";
import { readSession } from "../registry/sessions.ts";
import { applyDrain } from "./lua/index.ts";
import { visibleNamespaces } from "./scope.ts";

/** What this module uses of the app's dependencies. */
export type DrainDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/** A timed drain's key outlives its deadline by this much, so late heartbeats still see it. */
export const DRAIN_KEY_GRACE_MS = 7 * 24 * 3600 * 1000;

/**
 * The current record of the client a drain names, when the credential covers its whole
 * registration (namespaces, hostname, envs); else 403 forbidden, like an unknown client.
 */
async function drainableClient(deps: DrainDeps, claim: PinboardClaim, clientId: string): Promise<WorkerRecord> {
  // The client map and the records change together (one script), so a record missing behind the
  // map means the client re-registered between the two reads: read the map again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const owner = await deps.redis.hget(deps.keys.clientOwners, clientId);
    if (owner === null) break;
    const record = await readSession(deps, owner.slice(owner.indexOf("\n") + 1));
    if (!record) continue;
    if (visibleNamespaces(claim, record, deps.config.hostnameAware).length !== record.namespaces.length) break;
    return record;
  }
  throw forbidden();
}

/** Writes the drain; whether there was one before, and the client's record as drained (null: none). */
async function writeDrain(
  deps: DrainDeps,
  clientId: string,
  value: string,
  ttlMs: number,
): Promise<{ existed: boolean; record: WorkerRecord | null }> {
  const { existed, json } = await applyDrain(deps.redis, deps.keys, { clientId, value, ttlMs });
  if (json === "") return { existed, record: null };
  const record = parseRecord(json);
  await mirrorEverywhere(deps, record, json);
  return { existed, record };
}

/**
 * POST /registry/drain: null cordons (no new placements, no deadline); a number forces release
 * at now + max(deadline × 1000, leaseTtl), when the worker's lease ends. Applied to the record at
 * once and reported to the worker by its next heartbeat (draining, drainDeadline).
 */
export async function drain(
  deps: DrainDeps,
  claim: PinboardClaim,
  actor: AuditActor,
  clientId: string,
  deadline: number | null,
): Promise<{ drained: true }> {
  const judged = await drainableClient(deps, claim, clientId);
  let written: { record: WorkerRecord | null };
  let deadlineAt: number | undefined;
  if (deadline === null) {
    written = await writeDrain(deps, clientId, "cordon", 0);
  } else {
    const window = Math.max(deadline * 1000, deps.config.leaseTtlMs);
    deadlineAt = (await deps.redis.timeMs()) + window;
    written = await writeDrain(deps, clientId, String(deadlineAt), window + DRAIN_KEY_GRACE_MS);
  }
  deps.log.info("client drained", { clientId, deadline });
  await recordAudit(deps, {
    kind: "action",
    type: "drain",
    ...actor,
    target: workerTarget(written.record ?? judged),
    detail: { deadline, ...(deadlineAt !== undefined ? { deadlineAt } : {}) },
  });
  return { drained: true };
}

/** POST /registry/undrain: revokes the client's drain; revoked says whether there was one. */
export async function undrain(
  deps: DrainDeps,
  claim: PinboardClaim,
  actor: AuditActor,
  clientId: string,
): Promise<{ revoked: boolean }> {
  const judged = await drainableClient(deps, claim, clientId);
  const { existed: revoked, record } = await writeDrain(deps, clientId, "", 0);
  deps.log.info("client undrained", { clientId, revoked });
  await recordAudit(deps, {
    kind: "action",
    type: "undrain",
    ...actor,
    target: workerTarget(record ?? judged),
    detail: { revoked },
  });
  return { revoked };
}
