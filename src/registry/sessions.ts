import { ownership } from "../auth/account-tags.ts";
import { checkNamespace } from "../auth/claims.ts";
import type { Principal } from "../auth/passport.ts";
import { isNamespace } from "../contract/names.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest, forbidden, unknownSession } from "../errors/pinboard-error.ts";
import { parseRecord, type WorkerRecord } from "./record.ts";
import { scopeViolation } from "./record-scope.ts";

/** What this module uses of the app's dependencies. */
export type SessionsDeps = Pick<AppDeps, "config" | "redis" | "keys">;

/** Reads a session's fleet-wide record; null when there is none. */
export async function readSession(deps: SessionsDeps, sessionId: string): Promise<WorkerRecord | null> {
  const json = await deps.redis.hget(deps.keys.sessions, sessionId);
  return json === null ? null : parseRecord(json);
}

/**
 * The session a worker route acts on: 409 unknown session when there is no record, 403 when the
 * credential's account differs from the registering one or its claims no longer cover the
 * record. `live` adds the expiry check that heartbeat and deregister apply (release does not).
 * The record holds the account's tag (`accountTag`), or the account itself when it was written
 * before tags; a tag made under another key is a record this node cannot read, like one whose
 * secret does not open (heartbeat.ts): unknown, so that the worker registers again.
 */
export async function ownedSession(
  deps: SessionsDeps,
  principal: Principal,
  accountTag: string,
  sessionId: string,
  options: { live: boolean },
): Promise<WorkerRecord> {
  const record = await readSession(deps, sessionId);
  if (!record) throw unknownSession();
  if (options.live && record.expiry <= (await deps.redis.timeMs())) throw unknownSession();
  const owner = ownership(record.account, principal.account, accountTag);
  if (owner === "unreadable") throw unknownSession();
  if (owner === "other") throw forbidden();
  if (scopeViolation(principal.pinboard, record, deps.config.hostnameAware)) throw forbidden();
  return record;
}

/**
 * Checks a namespace named by release or tag: 400 invalid namespace, 400 namespace not
 * registered: …, 403 namespace not allowed: … outside the credential.
 */
export function checkRowNamespace(principal: Principal, record: WorkerRecord, ns: string): void {
  if (!isNamespace(ns)) throw badRequest("invalid namespace");
  if (!record.namespaces.includes(ns)) throw badRequest(`namespace not registered: ${ns}`);
  const denied = checkNamespace(principal.pinboard, ns);
  if (denied) throw forbidden(denied);
}
