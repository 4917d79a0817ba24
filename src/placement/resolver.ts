import type { RefusalOutcome } from "../contract/refusal-outcomes.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { type ResolvedOwner, type ResolveResult, resolve } from "./lua/index.ts";
import { copyPreviousNamespaceList } from "./ns-list-copy.ts";
import { Refusal } from "./refusal.ts";

/** What this module uses of the app's dependencies. */
export type ResolverDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "log" | "metrics" | "secrets">;

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
export interface Resolution extends ResolvedOwner {
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
  deps: ResolverDeps,
  req: ResolveRequest,
  onFence?: (fence: TakeoverFence) => Promise<void>,
): Promise<Resolution> {
  const { config } = deps;
  const known = deps.keys.bucketOf(req.id);
  const bucket = typeof known === "number" ? known : await known;
  let started = deps.now();
  let reply = await runResolve(deps, req, bucket, started);
  if (
    reply.kind === "refuse" &&
    reply.outcome === "unknown-ns" &&
    (await copyPreviousNamespaceList(deps, bucket, req.hostname, req.ns)) !== undefined
  ) {
    started = deps.now();
    reply = await runResolve(deps, req, bucket, started);
  }

  if (reply.kind === "refuse") {
    let outcome = reply.outcome as RefusalOutcome;
    if (outcome === "takeover-pending" && reply.fence && onFence) await onFence(reply.fence);
    if (outcome === "no-backends" && config.hostnameAware) outcome = "no-hostname-workers";
    throw new Refusal(outcome, reply.remainingMs);
  }
  // Synchronous once this node has opened the owner's sealed secret: a forward awaits no crypto.
  const opened = deps.secrets.open(reply.sessionId, reply.secret);
  return {
    sessionId: reply.sessionId,
    epoch: reply.epoch,
    advertiseUrl: reply.advertiseUrl,
    secret: typeof opened === "string" ? opened : await opened,
    fresh: reply.fresh,
    overwritten: reply.overwritten,
    survivingWindDown: reply.survivingWindDown,
    ownerHostname: reply.ownerHostname,
    bucket,
    // The decision is as old as the moment the script was sent: a slow Redis ages it.
    resolvedAt: started,
  };
}

async function runResolve(
  deps: ResolverDeps,
  req: ResolveRequest,
  bucket: number,
  started: number,
): Promise<ResolveResult> {
  const { keys, config } = deps;
  const reply = await resolve(deps.redis, keys, {
    bucket,
    env: req.env,
    ns: req.ns,
    id: req.id,
    hostname: req.hostname,
    takeover: req.takeover,
    exclude: req.exclude,
    callerSessionId: req.callerSessionId,
    affinityHash: req.affinityHash,
    bindingQuarantineUntil: req.bindingQuarantineUntil,
    leaseTtlMs: config.leaseTtlMs,
    balanceFactor: config.balanceFactor,
    seed: randomSeed(),
  });
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
