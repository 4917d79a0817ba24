import { recordAudit } from "../audit/trail.ts";
import { workerTarget } from "../audit/worker-target.ts";
import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { unknownSession } from "../errors/pinboard-error.ts";
import { deregisterSession } from "./lua/index.ts";
import { unmirrorEverywhere } from "./mirror.ts";
import { parseRecord } from "./record.ts";
import { ownedSession } from "./sessions.ts";

/** What this module uses of the app's dependencies. */
export type DeregisterDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

/**
 * POST /registry/deregister: removes the session from every namespace list and drops its
 * record. Its placements are left to dead-owner eviction on their next resolve. The audit trail
 * records worker.drained when the worker was draining (its own drain or an operator's: it left
 * once drained), else worker.deregistered.
 */
export async function deregister(
  deps: DeregisterDeps,
  principal: Principal,
  accountTag: string,
  sessionId: string,
): Promise<Record<string, never>> {
  await ownedSession(deps, principal, accountTag, sessionId, { live: true });
  const dropped = await deregisterSession(deps.redis, deps.keys, { sessionId });
  if (dropped.kind !== "ok") throw unknownSession();
  const record = parseRecord(dropped.json);
  await unmirrorEverywhere(deps, record, dropped.generation);
  await recordAudit(deps, {
    kind: "event",
    type: record.draining ? "worker.drained" : "worker.deregistered",
    subject: null,
    via: "registry",
    target: workerTarget(record),
    detail: record.draining ? { selfDraining: record.selfDraining === true } : {},
  });
  deps.log.info("worker deregistered", { sessionId, clientId: record.clientId });
  return {};
}
