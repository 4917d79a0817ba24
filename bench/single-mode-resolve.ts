/**
 * One resolve of `id` as the data plane sends it in single mode: env `*`, no hostname or takeover,
 * the bucket by Keys.bucketOf as Pinboard computes it. For the bench's own callers of the resolve
 * script (the Redis floors, the plain-resolve proxy).
 */
import type { ResolveInput } from "../src/placement/lua/index.ts";
import { type Keys, SINGLE_ENV, SINGLE_HOSTNAME } from "../src/redis/keys.ts";

export interface SingleModeResolve {
  leaseMs: number;
  balanceFactor: number;
  /** Seed of the script's load-balancing draws, 1 … 2^31 − 2. */
  seed: number;
  /** The affinity hash argument (uint32), as Pinboard passes for a client address; none when absent. */
  affinity?: number;
}

export function singleModeResolve(keys: Keys, ns: string, id: string, o: SingleModeResolve): ResolveInput {
  return {
    bucket: keys.bucketOf(id),
    env: SINGLE_ENV,
    ns,
    id,
    hostname: SINGLE_HOSTNAME,
    takeover: "",
    ...(o.affinity !== undefined ? { affinityHash: o.affinity } : {}),
    leaseTtlMs: o.leaseMs,
    balanceFactor: o.balanceFactor,
    seed: o.seed,
  };
}
