import type { Principal } from "../auth/passport.ts";
import { isSealed, UnreadableSecretError } from "../auth/worker-secrets.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { PinboardError, unknownSession } from "../errors/pinboard-error.ts";
import { type DeliveredMessage, deliverMessages } from "./control-queue.ts";
import { heartbeatSession } from "./lua/index.ts";
import { mirrorEverywhere, unmirrorEverywhere } from "./mirror.ts";
import { probeChallenge } from "./probe.ts";
import { parseRecord, type WorkerRecord } from "./record.ts";
import type { HeartbeatBody } from "./schemas.ts";
import { drainDeadlineSeconds } from "./session-ids.ts";
import { ownedSession } from "./sessions.ts";

/** What this module uses of the app's dependencies. */
export type HeartbeatDeps = Pick<AppDeps, "config" | "redis" | "keys" | "fetch" | "log" | "now" | "secrets">;

export interface HeartbeatReply {
  expiresInMs: number;
  draining: boolean;
  drainDeadline?: number;
  degraded?: true;
  messages?: DeliveredMessage[];
}

/**
 * POST /registry/heartbeat: re-probes the advertise URL, renews the lease, replaces headroom,
 * applies drains and delivers control messages. A probe that fails marks the worker degraded
 * (and still renews); one that answers another value voids the registration.
 *
 * A passing probe shows the worker alive when it answered, so the lease runs from then. A failing
 * one shows nothing: the lease runs from the heartbeat's arrival, not from the end of a probe
 * that may have waited PINBOARD_VERIFY_TIMEOUT_MS on a process that has stopped since. Otherwise
 * a worker stopped just after a heartbeat would keep its instances for that much longer.
 */
export async function heartbeat(
  deps: HeartbeatDeps,
  principal: Principal,
  accountTag: string,
  body: HeartbeatBody,
): Promise<HeartbeatReply> {
  const { config, keys, redis } = deps;
  const arrivedAt = deps.now();
  const known = await ownedSession(deps, principal, accountTag, body.sessionId, { live: true });
  const secret = await readableSecret(deps, known);
  const probe = await probeChallenge(
    { fetch: deps.fetch, timeoutMs: config.verifyTimeoutMs, log: deps.log },
    {
      advertiseUrl: known.advertiseUrl,
      secret,
      challenge: body.challenge,
      challengeValue: body.challengeValue,
    },
  );
  const renewed = await heartbeatSession(redis, keys, {
    sessionId: body.sessionId,
    clientId: known.clientId,
    headroom: body.headroom,
    draining: body.draining,
    probe,
    leaseTtlMs: probe === "pass" ? config.leaseTtlMs : Math.max(1, config.leaseTtlMs - (deps.now() - arrivedAt)),
    hostnameAware: config.hostnameAware,
    // A record written before sealing existed is sealed by its first heartbeat here.
    sealedSecret: isSealed(known.secret) ? "" : await deps.secrets.seal(known.sessionId, secret),
    // A record, client owner or session owner written before account tags gets the tag here.
    accountTag,
    legacyAccount: principal.account,
    acks: (body.acks ?? []).map(String),
  });

  if (renewed.kind === "unknown") throw unknownSession();
  if (renewed.kind === "voided" || renewed.kind === "superseded") {
    const record = parseRecord(renewed.json);
    await unmirrorEverywhere(deps, record, renewed.generation);
    deps.log.warn(`registration ${renewed.kind}`, { sessionId: record.sessionId, clientId: record.clientId });
    if (renewed.kind === "voided") {
      throw PinboardError.of(409, "registration voided: challenge value mismatch on the advertise URL", {
        reregister: true,
      });
    }
    throw PinboardError.of(
      409,
      `registration superseded: ${renewed.key} now bound to env ${renewed.env} at epoch ${renewed.epoch}`,
      {
        superseded: true,
      },
    );
  }

  const { json, now } = renewed;
  const record = parseRecord(json);
  await mirrorEverywhere(deps, record, json, { headroomReplaced: true });
  const messages = deliverMessages(renewed.messages, now);
  const drainDeadline = drainDeadlineSeconds(renewed.drainDeadline, now);
  return {
    expiresInMs: config.leaseTtlMs,
    draining: record.draining,
    ...(drainDeadline !== undefined ? { drainDeadline } : {}),
    ...(record.degradedSince !== undefined ? { degraded: true as const } : {}),
    ...(messages.length ? { messages } : {}),
  };
}

/**
 * The record's secret for the probe. One this node cannot open (sealed under another key) makes
 * the session unknown: the worker registers again, and its new record is sealed under this key.
 */
async function readableSecret(deps: HeartbeatDeps, record: WorkerRecord): Promise<string> {
  try {
    return await deps.secrets.open(record.sessionId, record.secret);
  } catch (err) {
    if (err instanceof UnreadableSecretError) throw unknownSession();
    throw err;
  }
}
