import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps.ts";
import { PinboardError, unknownSession } from "../errors.ts";
import { heartbeatSession } from "../redis/scripts/index.ts";
import { deliverMessages, type DeliveredMessage } from "./control-queue.ts";
import { mirrorEverywhere, unmirrorEverywhere } from "./mirror.ts";
import { probeChallenge } from "./probe.ts";
import { parseRecord } from "./record.ts";
import type { HeartbeatBody } from "./schemas.ts";
import { ownedSession } from "./sessions.ts";
import { drainDeadlineSeconds } from "./session-ids.ts";

export interface HeartbeatAnswer {
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
 */
export async function heartbeat(deps: AppDeps, principal: Principal, body: HeartbeatBody): Promise<HeartbeatAnswer> {
  const { config, keys, redis } = deps;
  const known = await ownedSession(deps, principal, body.sessionId, { live: true });
  const probe = await probeChallenge(
    { fetch: deps.fetch, timeoutMs: config.verifyTimeoutMs, log: deps.log },
    { advertiseUrl: known.advertiseUrl, secret: known.secret, challenge: body.challenge, challengeValue: body.challengeValue },
  );
  const reply = (await redis.run(
    heartbeatSession,
    [keys.sessions, keys.clientOwners, keys.queue(body.sessionId), keys.drain(known.clientId), keys.hostnameBindings, keys.generation, keys.sessionExpiries],
    [
      body.sessionId,
      known.clientId,
      body.headroom,
      body.draining ? "1" : "0",
      probe,
      config.leaseTtlMs,
      config.hostnameAware ? "1" : "0",
      ...(body.acks ?? []).map(String),
    ],
  )) as [string, string?, string?, string?, string[]?, string?];

  const [status, json = "", third = "", fourth = ""] = reply;
  if (status === "unknown") throw unknownSession();
  if (status === "voided" || status === "superseded") {
    const record = parseRecord(json);
    await unmirrorEverywhere(deps, record, third);
    deps.log.warn(`registration ${status}`, { sessionId: record.sessionId, clientId: record.clientId });
    if (status === "voided") {
      throw PinboardError.of(409, "registration voided: challenge value mismatch on the advertise URL", { reregister: true });
    }
    const [, , , key, env, epoch] = reply as string[];
    throw PinboardError.of(409, `registration superseded: ${key} now bound to env ${env} at epoch ${epoch}`, {
      superseded: true,
    });
  }

  const record = parseRecord(json);
  await mirrorEverywhere(deps, record, json, { headroomReplaced: true });
  const now = Number(fourth);
  const messages = deliverMessages(reply[4] ?? [], now);
  const drainDeadline = drainDeadlineSeconds(third, now);
  return {
    expiresInMs: config.leaseTtlMs,
    draining: record.draining,
    ...(drainDeadline !== undefined ? { drainDeadline } : {}),
    ...(record.degradedSince !== undefined ? { degraded: true as const } : {}),
    ...(messages.length ? { messages } : {}),
  };
}
