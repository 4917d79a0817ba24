import { recordWorkerEjection } from "../audit/trail.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { markEjectedCall, recordFailure, recordSuccess } from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type OutliersDeps = Pick<AppDeps, "config" | "redis" | "keys" | "log">;

export const EJECT_AFTER_FAILURES = 5;
export const BASE_EJECTION_MS = 30_000;
/** Doubling stops at 32 × 30 s = 16 minutes. */
export const MAX_EJECTION_MS = 32 * BASE_EJECTION_MS;

/**
 * Outlier ejection, shared through Redis so every node agrees: five consecutive 502/503/504
 * (or unreachable forwards) eject a worker from new placements for 30 s, doubling per ejection,
 * never more than half the workers at once. A node resets a worker's run only after it has seen
 * a failure of that worker itself, so successes cost no Redis write on the hot path. An ejection
 * is recorded in the audit trail (worker.ejected) on the failure path that caused it; its end,
 * by time, is recorded by the sweeper (worker.readmitted).
 */
export class OutlierTracker {
  private readonly failing = new Set<string>();

  constructor(private readonly deps: OutliersDeps) {}

  async failure(sessionId: string): Promise<void> {
    const { keys, redis } = this.deps;
    this.failing.add(sessionId);
    const until = await recordFailure(redis, keys, {
      sessionId,
      ejectAfter: EJECT_AFTER_FAILURES,
      baseEjectionMs: BASE_EJECTION_MS,
      maxEjectionMs: MAX_EJECTION_MS,
    });
    if (until === 0) return;
    this.deps.log.warn("worker ejected from new placements", { sessionId, untilMs: until });
    await redis.runMany(keys.allBuckets().map((bucket) => markEjectedCall(keys, { bucket, sessionId, until })));
    await recordWorkerEjection(this.deps, sessionId, until);
  }

  /** Ends a failure run this node saw; null (no promise, no Redis call) when it saw none. */
  success(sessionId: string): Promise<unknown> | null {
    if (!this.failing.delete(sessionId)) return null;
    return recordSuccess(this.deps.redis, this.deps.keys, { sessionId });
  }
}

export const countsAsFailure = (status: number): boolean => status === 502 || status === 503 || status === 504;
