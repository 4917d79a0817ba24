import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps.ts";
import { unknownSession } from "../errors.ts";
import { deregisterSession } from "../redis/scripts/index.ts";
import { unmirrorEverywhere } from "./mirror.ts";
import { parseRecord } from "./record.ts";
import { ownedSession } from "./sessions.ts";

/**
 * POST /registry/deregister: removes the session from every namespace list and drops its
 * record. Its placements are left to dead-owner eviction on their next resolve.
 */
export async function deregister(deps: AppDeps, principal: Principal, sessionId: string): Promise<Record<string, never>> {
  const { keys } = deps;
  await ownedSession(deps, principal, sessionId, { live: true });
  const reply = (await deps.redis.run(
    deregisterSession,
    [keys.sessions, keys.clientOwners, keys.queue(sessionId), keys.generation, keys.sessionExpiries],
    [sessionId],
  )) as string[];
  if (reply[0] !== "ok") throw unknownSession();
  const record = parseRecord(reply[1]!);
  await unmirrorEverywhere(deps, record, reply[2]!);
  deps.log.info("worker deregistered", { sessionId, clientId: record.clientId });
  return {};
}
