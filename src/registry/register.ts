import type { Principal } from "../auth/passport.ts";
import type { AppDeps } from "../deps.ts";
import { PinboardError, badRequest, forbidden } from "../errors.ts";
import { registerBucket, registerSession } from "../redis/scripts/index.ts";
import { applyFieldRules, type RegistrationFields } from "./field-rules.ts";
import { namespaceListKeys } from "./mirror.ts";
import { probeChallenge } from "./probe.ts";
import { envOf, parseRecord, type WorkerRecord } from "./record.ts";
import { scopeViolation } from "./record-scope.ts";
import type { RegisterBody } from "./schemas.ts";
import { queueWindDown } from "./control-queue.ts";
import { drainDeadlineSeconds, newSessionId } from "./session-ids.ts";

/**
 * How long a session's owner (account and client) is remembered past its record, at least, so
 * that a later register can reclaim its rows through prevSessionId: one to two of these windows
 * (register-session.ts). A reclaim after that returns the ids in duplicates.
 */
export const SESSION_OWNER_MEMORY_MS = 24 * 60 * 60 * 1000;
/** At most this many remembered owners; past it the oldest are forgotten first. */
export const SESSION_OWNER_MEMORY_CAP = 100_000;

export interface RegisterAnswer {
  sessionId: string;
  expiresInMs: number;
  draining: boolean;
  drainDeadline?: number;
  duplicates?: Array<{ ns: string; id: string }>;
}

/**
 * POST /registry/register: field rules (400), credential scope (403) before the probe, the
 * challenge probe (400 registration probe failed), then the fleet-wide write (409 conflicts)
 * and the bucket mirrors with the reclaim of in-memory instances.
 */
export async function register(deps: AppDeps, principal: Principal, body: RegisterBody): Promise<RegisterAnswer> {
  const { config, keys, redis } = deps;
  const fields = applyFieldRules(body, config.hostnameAware);
  const denied = scopeViolation(principal.pinboard, fields, config.hostnameAware);
  if (denied) throw forbidden(denied);

  const probe = await probeChallenge(
    { fetch: deps.fetch, timeoutMs: config.verifyTimeoutMs, log: deps.log },
    { advertiseUrl: fields.advertiseUrl, secret: body.secret, challenge: body.challenge, challengeValue: body.challengeValue },
  );
  if (probe !== "pass") throw badRequest("registration probe failed");

  const draft = {
    sessionId: newSessionId(),
    clientId: body.clientId,
    account: principal.account,
    secret: body.secret,
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
  const reply = (await redis.run(
    registerSession,
    [
      keys.sessions,
      keys.clientOwners,
      keys.hostnameBindings,
      keys.envBindings,
      keys.bindingQuarantine,
      keys.drain(body.clientId),
      keys.generation,
      keys.sessionExpiries,
      keys.sessionOwners,
      keys.sessionOwnerChecks,
    ],
    [
      JSON.stringify(draft),
      config.leaseTtlMs,
      config.hostnameAware ? "1" : "0",
      body.prevSessionId ?? "",
      SESSION_OWNER_MEMORY_MS,
      SESSION_OWNER_MEMORY_CAP,
    ],
  )) as string[];
  if (reply[0] === "conflict") throw PinboardError.of(409, reply[1] ?? "conflict");
  const [, json = "", deadline = "", , prevAllowed, now = "0"] = reply as [string, string, string, string, number, string];
  const record = parseRecord(json);

  const prev = prevAllowed === 1 ? (body.prevSessionId ?? "") : "";
  const duplicates = await mirrorAndReclaim(deps, record, json, fields, prev);
  const drainDeadline = drainDeadlineSeconds(deadline, Number(now));
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

/**
 * Mirrors the new record into every bucket and reclaims the instances the worker still holds:
 * rows owned by prevSessionId re-bind (keeping their epoch), every other id is a duplicate. A
 * reclaimed row carrying a wind-down expiry re-queues its wind_down to the new session.
 */
async function mirrorAndReclaim(
  deps: AppDeps,
  record: WorkerRecord,
  json: string,
  fields: RegistrationFields,
  prevSessionId: string,
): Promise<Array<{ ns: string; id: string }>> {
  const { keys, config } = deps;
  const byBucket = new Map<number, Array<{ ns: string; id: string }>>();
  for (const instance of fields.instances) {
    const b = keys.bucketOf(instance.id);
    let list = byBucket.get(b);
    if (!list) byBucket.set(b, (list = []));
    list.push(instance);
  }

  const calls = keys.allBuckets().map((b) => {
    const lists = namespaceListKeys(keys, b, record);
    const head = [keys.workers(b), keys.clients(b), keys.workerExpiries(b), ...lists];
    const placementKeys: string[] = [];
    const nsOfKey: string[] = [];
    const pairs: (string | number)[] = [];
    for (const { ns, id } of byBucket.get(b) ?? []) {
      const key = keys.placements(b, envOf(record, ns), ns);
      let index = placementKeys.indexOf(key);
      if (index < 0) index = placementKeys.push(key) - 1, nsOfKey.push(ns);
      pairs.push(head.length + index + 1, id);
    }
    return {
      call: {
        script: registerBucket,
        keys: [...head, ...placementKeys],
        args: [record.sessionId, json, config.leaseTtlMs, lists.length / 3, prevSessionId, ...pairs],
      },
      nsOfIndex: (kidx: number) => nsOfKey[kidx - head.length - 1] ?? "",
    };
  });

  const replies = (await deps.redis.runMany(calls.map((c) => c.call))) as Array<[string, string[], string[]]>;
  const duplicates: Array<{ ns: string; id: string }> = [];
  const requeue: Promise<unknown>[] = [];
  replies.forEach(([, dups, rewound], i) => {
    const nsOf = calls[i]!.nsOfIndex;
    for (let j = 0; j < dups.length; j += 2) duplicates.push({ ns: nsOf(Number(dups[j])), id: dups[j + 1]! });
    for (let j = 0; j < rewound.length; j += 3) {
      const ns = nsOf(Number(rewound[j]));
      requeue.push(queueWindDown(deps, record.sessionId, ns, rewound[j + 1]!, Number(rewound[j + 2])));
    }
  });
  await Promise.all(requeue);
  return duplicates;
}
