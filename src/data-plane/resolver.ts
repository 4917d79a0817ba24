import type { AppDeps } from "../deps.ts";
import { resolve as resolveScript } from "../redis/scripts/index.ts";
import { copyPreviousNamespaceList } from "./ns-list-copy.ts";
import { Refusal, type RefusalOutcome } from "./outcomes.ts";

export interface ResolveRequest {
  ns: string;
  id: string;
  env: string;
  /** The request's hostname in hostname-aware mode, "" otherwise. */
  hostname: string;
  /** The env's takeover in hostname-aware mode, "" otherwise. */
  takeover: "" | "wind_down" | "deny";
  bindingQuarantineUntil?: number;
  exclude?: string;
  callerSessionId?: string;
  /** uint32 affinity hash; undefined skips key affinity. */
  affinityHash?: number;
}

/** Where one request goes: the placement's owner, its epoch and how to reach it. */
export interface Resolution {
  sessionId: string;
  epoch: string;
  advertiseUrl: string;
  secret: string;
  /** True when this resolve minted the placement (release it if the forward never connects). */
  fresh: boolean;
  /** The overwritten marker's epoch, "" when the id is not overwritten-listed. */
  overwritten: string;
  /** A wind-down expiry that survived the previous owner (ms), "" when none. */
  survivingWindDown: string;
  ownerHostname: string;
  bucket: number;
  resolvedAt: number;
}

export interface TakeoverFence {
  ownerSessionId: string;
  remainingMs: number;
  /**
   * The fence itself: the row's wind-down expiry, in Redis-clock ms like every stored deadline.
   * Queue the owner's wind_down with this, not with this node's clock + remainingMs.
   */
  deadlineAt: number;
}

/**
 * Runs the resolve script for one request. A refusal throws `Refusal` (counted by the caller);
 * a takeover fence that was just set is reported through `onFence` so the owner gets its
 * wind_down message. A bucket without the namespace's list (unknown-ns) first copies an earlier
 * bucket's (ns-list-copy.ts) and resolves once more; only then is the namespace unknown.
 */
export async function resolvePlacement(
  deps: AppDeps,
  req: ResolveRequest,
  onFence?: (fence: TakeoverFence) => Promise<void>,
): Promise<Resolution> {
  const { config } = deps;
  const known = deps.keys.bucketOf(req.id);
  const bucket = typeof known === "number" ? known : await known;
  let started = deps.now();
  let reply = await runResolve(deps, req, bucket, started);
  if (reply[0] === "refuse" && reply[1] === "unknown-ns" && (await copyPreviousNamespaceList(deps, bucket, req.hostname, req.ns)) !== undefined) {
    started = deps.now();
    reply = await runResolve(deps, req, bucket, started);
  }

  if (reply[0] === "refuse") {
    let outcome = reply[1] as RefusalOutcome;
    if (outcome === "takeover-pending" && reply[4] === "1" && onFence) {
      await onFence({ ownerSessionId: reply[3]!, remainingMs: Number(reply[2]), deadlineAt: Number(reply[5]) });
    }
    if (outcome === "no-backends" && config.hostnameAware) outcome = "no-hostname-workers";
    throw new Refusal(outcome, Number(reply[2] ?? 0));
  }
  const [, sessionId, epoch, advertiseUrl, secret, fresh, overwritten, survivingWindDown, ownerHostname] = reply;
  return {
    sessionId: sessionId!,
    epoch: epoch!,
    advertiseUrl: advertiseUrl!,
    secret: secret!,
    fresh: fresh === "1",
    overwritten: overwritten ?? "",
    survivingWindDown: survivingWindDown ?? "",
    ownerHostname: ownerHostname ?? "",
    bucket,
    // The decision is as old as the moment the script was sent: a slow Redis ages it.
    resolvedAt: started,
  };
}

async function runResolve(deps: AppDeps, req: ResolveRequest, bucket: number, started: number): Promise<string[]> {
  const { keys, config } = deps;
  const reply = (await deps.redis.run(
    resolveScript,
    [
      keys.placements(bucket, req.env, req.ns),
      keys.nsWorkers(bucket, req.hostname, req.ns),
      keys.workers(bucket),
      keys.bootTime(bucket),
      keys.epoch(bucket),
      keys.overwritten(bucket),
      keys.spaces(bucket),
      keys.ejected(bucket),
      keys.nsExpiries(bucket, req.hostname, req.ns),
      keys.nsSummary(bucket, req.hostname, req.ns),
      keys.spent(bucket),
    ],
    [
      req.id,
      config.leaseTtlMs,
      req.hostname,
      req.takeover,
      req.exclude ?? "",
      req.callerSessionId ?? "",
      req.affinityHash === undefined ? "" : req.affinityHash,
      config.balanceFactor,
      req.bindingQuarantineUntil ?? "",
      `${req.env}\n${req.ns}`,
      randomSeed(),
    ],
  )) as string[];
  deps.metrics.script("resolve", (deps.now() - started) / 1000);
  return reply;
}

/**
 * The seed of the script's load-balancing draws (Park–Miller, 1 … 2^31 − 2). Not a secret:
 * Math.random spares a crypto call per request.
 */
export function randomSeed(): number {
  return 1 + Math.floor(Math.random() * 2147483646);
}
