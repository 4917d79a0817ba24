import type { AppDeps } from "./deps.ts";
import { gcBucket, gcFleet, sweeperLease } from "./redis/scripts/index.ts";
import { newSessionId } from "./registry/session-ids.ts";

export interface SweepReport {
  /** False when another node held the sweeper lease. */
  ran: boolean;
  sessions?: number;
  prunedMirrors?: number;
  durationMs: number;
}

/**
 * One sweep pass under the sweeper lease: cron calls it on Workers, a timer on Node. It holds
 * the lease for at most `leaseTtlMs` and keeps its work bounded so it fits a Workers cron
 * invocation. This pass runs the GC; later stages (durability wakes, due alarms) plug in here.
 */
export async function runSweep(deps: AppDeps, holder = `sweeper-${newSessionId()}`): Promise<SweepReport> {
  const { redis, keys, config } = deps;
  const started = deps.now();
  const held = await redis.run(sweeperLease, [keys.sweeperLease], [holder, config.leaseTtlMs]);
  if (Number(held) !== 1) return { ran: false, durationMs: deps.now() - started };

  const sessions = Number(
    await redis.run(
      gcFleet,
      [keys.sessions, keys.clientOwners, keys.hostnameBindings, keys.envBindings, keys.members],
      [config.leaseTtlMs, config.hostnameAware ? "1" : "0"],
    ),
  );
  const pruned = await redis.runMany(
    keys.allBuckets().map((b) => ({ script: gcBucket, keys: [keys.workers(b)], args: [config.leaseTtlMs] })),
  );
  const report: SweepReport = {
    ran: true,
    sessions,
    prunedMirrors: pruned.reduce<number>((sum, n) => sum + Number(n), 0),
    durationMs: deps.now() - started,
  };
  deps.log.debug("sweep pass", { ...report });
  return report;
}
