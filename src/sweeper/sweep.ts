import type { AppDeps } from "../deps.ts";
import { newSessionId } from "../registry/session-ids.ts";
import { type AlarmReport, sweepAlarms } from "./due-alarms.ts";
import { gcBucketCall, gcFleet, parseGcBucket, sweeperLease } from "./lua/index.ts";
import { sweepOrphans } from "./orphans.ts";
import { sweepResurrection } from "./resurrect.ts";
import { sweepWakes, type WakeReport } from "./wakes.ts";

/** What this module uses of the app's dependencies. */
export type SweepDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "fetch" | "log" | "fleet" | "runtime" | "metrics" | "durable" | "secrets"
>;

/** The sweeper lease outlives one pass comfortably and is renewed between work items. */
export const SWEEPER_LEASE_MS = 60_000;

export interface SweepReport {
  /** False when another node held the sweeper lease. */
  ran: boolean;
  sessions?: number;
  prunedMirrors?: number;
  resurrected?: number;
  /** Placements found with a dead owner and listed for a wake. */
  orphans?: number;
  wakes?: WakeReport;
  alarms?: AlarmReport;
  durationMs: number;
}

let passes = 0;

/**
 * One sweep pass under the sweeper lease: cron calls it on Workers, a timer on Node. GC prunes
 * dead workers and mirrors; a resurrection after Redis lost its data pages durable instances
 * back in; placements of dead owners are listed as overwritten; the durability sweep wakes
 * overwritten ids; due alarms fire. Each stage handles at
 * most PINBOARD_SWEEP_BATCH items and resumes where the last pass stopped, so a pass fits a
 * Workers cron invocation.
 */
export async function runSweep(deps: SweepDeps, holder = `sweeper-${newSessionId()}`): Promise<SweepReport> {
  const { redis, keys } = deps;
  const started = deps.now();
  // A node of another fleet (other shards, lease, mode) sharing the Redis must not sweep it.
  if (!(await deps.fleet.current()).serving) return { ran: false, durationMs: deps.now() - started };
  const keepLease = () => sweeperLease(redis, keys, { holder, ttlMs: SWEEPER_LEASE_MS });
  if (!(await keepLease())) return { ran: false, durationMs: deps.now() - started };

  try {
    return await sweepUnderLease(deps, started, keepLease);
  } finally {
    await sweeperLease(redis, keys, { holder, ttlMs: 0 }).catch(() => {});
  }
}

async function sweepUnderLease(
  deps: SweepDeps,
  started: number,
  keepLease: () => Promise<boolean>,
): Promise<SweepReport> {
  const { redis, keys, config } = deps;
  const sessions = await gcFleet(redis, keys, {
    leaseTtlMs: config.leaseTtlMs,
    hostnameAware: config.hostnameAware,
    auditCap: config.auditMaxEntries,
  });
  const pruned = await redis.runMany(
    keys.allBuckets().map((bucket) => gcBucketCall(keys, { bucket, leaseTtlMs: config.leaseTtlMs })),
  );
  const resurrected = await sweepResurrection(deps, config.sweepBatch);
  const orphans = await sweepOrphans(deps);
  const wakes = await sweepWakes(deps, config.sweepBatch, passes++ % config.shards, keepLease);
  const alarms = await sweepAlarms(deps, config.sweepBatch, keepLease);

  const report: SweepReport = {
    ran: true,
    sessions,
    prunedMirrors: pruned.reduce<number>((sum, reply) => sum + parseGcBucket(reply), 0),
    resurrected,
    orphans,
    wakes,
    alarms,
    durationMs: deps.now() - started,
  };
  deps.metrics.sweep("passes", 1);
  deps.metrics.sweep("wakes", wakes.woken);
  deps.metrics.sweep("alarms", alarms.fired);
  deps.metrics.sweep("parked", wakes.parked);
  deps.log.debug("sweep pass", { ...report });
  return report;
}
