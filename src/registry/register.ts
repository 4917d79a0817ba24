import { recordAudit } from "../audit/trail.ts";
import { workerTarget } from "../audit/worker-target.ts";
import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { badRequest, forbidden, PinboardError } from "../errors/pinboard-error.ts";
import { applyFieldRules } from "./field-rules.ts";
import { registerSession } from "./lua/index.ts";
import { probeChallenge } from "./probe.ts";
import { parseRecord, type WorkerRecord } from "./record.ts";
import { scopeViolation } from "./record-scope.ts";
import { type InstanceRef, mirrorAndReclaim, undoRegistration } from "./register-fanout.ts";
import type { RegisterBody } from "./schemas.ts";
import { drainDeadlineSeconds, newSessionId } from "./session-ids.ts";

/** What this module uses of the app's dependencies. */
export type RegisterDeps = Pick<AppDeps, "config" | "redis" | "keys" | "fetch" | "log" | "secrets">;

/**
 * How long a session's owner (account and client) is remembered past its record, at least, so
 * that a later register can reclaim its rows through prevSessionId: one to two of these windows
 * (register-session.ts). A reclaim after that returns the ids in duplicates.
 */
export const SESSION_OWNER_MEMORY_MS = 24 * 60 * 60 * 1000;
/** At most this many remembered owners; past it the oldest are forgotten first. */
export const SESSION_OWNER_MEMORY_CAP = 100_000;

export interface RegisterReply {
  sessionId: string;
  expiresInMs: number;
  draining: boolean;
  drainDeadline?: number;
  duplicates?: Array<{ ns: string; id: string }>;
}

/**
 * POST /registry/register: field rules (400), credential scope (403) before the probe, the
 * challenge probe (400 registration probe failed), then the fleet-wide write (409 conflicts)
 * and the bucket mirrors with the reclaim of in-memory instances. When anything after the
 * fleet-wide write fails, the registration is undone before the error answers (register-fanout.ts).
 */
export async function register(
  deps: RegisterDeps,
  principal: Principal,
  accountTag: string,
  body: RegisterBody,
): Promise<RegisterReply> {
  const { config, keys, redis } = deps;
  const fields = applyFieldRules(body, config.hostnameAware);
  const denied = scopeViolation(principal.pinboard, fields, config.hostnameAware);
  if (denied) throw forbidden(denied);

  const probe = await probeChallenge(
    { fetch: deps.fetch, timeoutMs: config.verifyTimeoutMs, log: deps.log },
    {
      advertiseUrl: fields.advertiseUrl,
      secret: body.secret,
      challenge: body.challenge,
      challengeValue: body.challengeValue,
    },
  );
  if (probe !== "pass") throw badRequest("registration probe failed");

  const sessionId = newSessionId();
  const draft = {
    sessionId,
    clientId: body.clientId,
    // Only the account's tag is stored (auth/account-tags.ts); ownership compares tags.
    account: accountTag,
    // Only the sealed secret is stored: a reader of Redis learns nothing it could sign with.
    secret: await deps.secrets.seal(sessionId, body.secret),
    advertiseUrl: fields.advertiseUrl,
    namespaces: fields.namespaces,
    hostname: fields.hostname,
    env: fields.env,
    envs: fields.envs,
    takeover: fields.takeover,
    bindingEpoch: String(fields.bindingEpoch),
    headroom: body.headroom,
    selfDraining: body.draining,
  };
  const written = await registerSession(redis, keys, {
    json: JSON.stringify(draft),
    clientId: body.clientId,
    leaseTtlMs: config.leaseTtlMs,
    hostnameAware: config.hostnameAware,
    prevSessionId: body.prevSessionId ?? "",
    ownerMemoryMs: SESSION_OWNER_MEMORY_MS,
    ownerMemoryCap: SESSION_OWNER_MEMORY_CAP,
    auditCap: config.auditMaxEntries,
    legacyAccount: principal.account,
  });
  if (written.kind === "conflict") throw PinboardError.of(409, written.message);
  const { json } = written;
  const record = parseRecord(json);

  const prev = written.prevAllowed ? (body.prevSessionId ?? "") : "";
  let duplicates: InstanceRef[];
  try {
    duplicates = await mirrorAndReclaim(deps, record, json, fields.instances, prev);
  } catch (err) {
    await undoRegistration(deps, record, fields.instances, prev);
    throw err;
  }
  const drainDeadline = drainDeadlineSeconds(written.drainDeadline, written.now);
  await recordRegistered(deps, record, written.replaced, fields.instances.length, duplicates.length);
  deps.log.info("worker registered", {
    sessionId: record.sessionId,
    clientId: record.clientId,
    advertiseUrl: record.advertiseUrl,
    namespaces: record.namespaces,
  });
  return {
    sessionId: record.sessionId,
    expiresInMs: config.leaseTtlMs,
    draining: record.draining,
    ...(drainDeadline !== undefined ? { drainDeadline } : {}),
    ...(duplicates.length ? { duplicates } : {}),
  };
}

/** worker.registered in the audit trail: the instances offered for reclaim that moved to the new session. */
function recordRegistered(
  deps: RegisterDeps,
  record: WorkerRecord,
  replaced: string,
  offered: number,
  duplicates: number,
): Promise<void> {
  return recordAudit(deps, {
    kind: "event",
    type: "worker.registered",
    subject: null,
    via: "registry",
    target: workerTarget(record),
    detail: {
      advertiseUrl: record.advertiseUrl,
      draining: record.draining,
      reclaimed: offered - duplicates,
      duplicates,
      ...(replaced !== "" && replaced !== record.sessionId ? { replaced } : {}),
    },
  });
}
