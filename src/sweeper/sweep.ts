import type { AppDeps } from "../deps/app-deps.ts";
import { meteredPort } from "../redis/request-meter.ts";
import { newSessionId } from "../registry/session-ids.ts";
import { type AlarmReport, sweepAlarms } from "./due-alarms.ts";
import { gcBucketCall, gcFleet, parseGcBucket, sweeperLease } from "./lua/index.ts";
import { sweepOrphans } from "./orphans.ts";
import { sweepResurrection } from "./resurrect.ts";
import { SubrequestBudget, sweepSubrequestLimit } from "./subrequest-budget.ts";
import { sweepWakes, type WakeReport } from "./wakes.ts";

/** What this module uses of the app's dependencies. */
export type SweepDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "fetch" | "log" | "fleet" | "runtime" | "metrics" | "durable" | "secrets"
>;

/** The dependencies of one pass: Redis views that draw every request from the pass's budget. */
type PassDeps = SweepDeps & { budget: SubrequestBudget };

/** The sweeper lease outlives one pass comfortably and is renewed between work items. */
export const SWEEPER_LEASE_MS = 60_000;

/**
 * What each stage leaves to the stages after it, as a fraction of the budget: due alarms go
 * first, so wakes never starve them, but may not starve the backlog either.
 */
const LEAVE = { alarms: 0.4, resurrection: 0.3, orphans: 0.25, wakes: 0 } as const;

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
  /** Requests the pass made (Redis requests and worker calls), when it counts them (a finite budget). */
  subrequests?: number;
  durationMs: number;
}

/**
 * One sweep pass under the sweeper lease: cron calls it on Workers, a timer on Node. GC prunes
 * dead workers and mirrors; due alarms fire; a resurrection after Redis lost its data pages
 * durable instances back in; placements of dead owners are listed as overwritten; the
 * durability sweep wakes overwritten ids. Every Redis request and worker call of the pass draws
 * from its subrequest budget (PINBOARD_SWEEP_SUBREQUEST_BUDGET: 45 on Workers, whose Free plan
 * allows 50 per invocation); each stage stops where its share ends and resumes there on the next
 * pass, from cursors kept in Redis.
 */
export async function runSweep(deps: SweepDeps, holder = `sweeper-${newSessionId()}`): Promise<SweepReport> {
  const started = deps.now();
  const budget = new SubrequestBudget(sweepSubrequestLimit(deps));
  const pass = passDeps(deps, budget);
  const counted = () => (Number.isFinite(budget.limit) ? { subrequests: budget.used } : {});
  const skipped = () => ({ ran: false, ...counted(), durationMs: deps.now() - started });
  // The fleet claim goes out through the node's own port: counted here whenever it may go out.
  if (!deps.fleet.servingNow()) budget.take();
  // A node of another fleet (other shards, lease, mode) sharing the Redis must not sweep it.
  if (!(await deps.fleet.current()).serving) return skipped();
  const lease = leaseKeeper(pass, holder);
  if (!(await lease.take())) return skipped();

  budget.hold(1); // for the release
  let report: SweepReport;
  try {
    report = await sweepUnderLease(pass, lease.keep);
  } finally {
    budget.free(1);
    await lease.release().catch(() => {});
  }
  Object.assign(report, counted(), { durationMs: deps.now() - started });
  deps.log.debug("sweep pass", { ...report });
  return report;
}

function passDeps(deps: SweepDeps, budget: SubrequestBudget): PassDeps {
  if (!Number.isFinite(budget.limit)) return { ...deps, budget };
  const redis = meteredPort(deps.redis, budget);
  const durableRedis = deps.durable.redis === deps.redis ? redis : meteredPort(deps.durable.redis, budget);
  return { ...deps, redis, durable: { ...deps.durable, redis: durableRedis }, budget };
}

/** Takes the lease, renews it when a third of it has passed since (not on every item), releases it. */
function leaseKeeper(deps: PassDeps, holder: string) {
  let renewedAt = -Infinity;
  const take = async () => {
    const held = await sweeperLease(deps.redis, deps.keys, { holder, ttlMs: SWEEPER_LEASE_MS });
    if (held) renewedAt = deps.now();
    return held;
  };
  return {
    take,
    keep: async () => deps.now() - renewedAt < SWEEPER_LEASE_MS / 3 || take(),
    release: () => sweeperLease(deps.redis, deps.keys, { holder, ttlMs: 0 }),
  };
}

async function sweepUnderLease(deps: PassDeps, keepLease: () => Promise<boolean>): Promise<SweepReport> {
  const { redis, keys, config } = deps;
  // One request on the REST adapter: the fleet's GC and every bucket's.
  const [sessions, pruned] = await Promise.all([
    gcFleet(redis, keys, {
      leaseTtlMs: config.leaseTtlMs,
      hostnameAware: config.hostnameAware,
      auditCap: config.auditMaxEntries,
    }),
    redis.runMany(keys.allBuckets().map((bucket) => gcBucketCall(keys, { bucket, leaseTtlMs: config.leaseTtlMs }))),
  ]);
  const alarms = await sweepAlarms(deps, keepLease, LEAVE.alarms);
  const resurrected = await sweepResurrection(deps, config.sweepBatch, LEAVE.resurrection);
  const orphans = await sweepOrphans(deps, LEAVE.orphans);
  const wakes = await sweepWakes(deps, keepLease);

  deps.metrics.sweep("passes", 1);
  deps.metrics.sweep("wakes", wakes.woken);
  deps.metrics.sweep("alarms", alarms.fired);
  deps.metrics.sweep("parked", wakes.parked);
  return {
    ran: true,
    sessions,
    prunedMirrors: pruned.reduce<number>((sum, reply) => sum + parseGcBucket(reply), 0),
    resurrected,
    orphans,
    wakes,
    alarms,
    durationMs: 0,
  };
}
