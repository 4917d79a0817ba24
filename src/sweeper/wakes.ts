import { UnreadableSecretError } from "../auth/worker-secrets.ts";
import { instanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { Refusal } from "../placement/refusal.ts";
import { callInstance } from "./instance-calls.ts";
import { parkedNow, type WakeOutcome, type WakePage, wakePages, wakeProgressCall } from "./lua/index.ts";
import { placeForSweep, releaseRefused, type SweepPlacement } from "./place-for-sweep.ts";
import { budgetSpent, type SubrequestBudget } from "./subrequest-budget.ts";

/** What this module uses of the app's dependencies, and the pass's budget. */
export type WakesDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "fetch" | "log" | "runtime" | "metrics" | "durable" | "secrets"
> & { budget: SubrequestBudget };

/** Failed wakes retry after 5 s, doubling; the fifth failure parks the entry for operators. */
export const WAKE_BACKOFF_MS = 5000;
export const WAKE_PARK_AFTER = 5;
/** Requests of one round besides its wakes: the pages, the durability-index lookups, the bookkeeping. */
export const WAKE_ROUND_COST = 3;
/**
 * Requests of one wake, as estimated: the binding, the resolve, a fence or a NOSCRIPT retry, the
 * call, a refused placement's release.
 */
export const WAKE_COST = 6;
/** Rounds one pass runs at most. */
const ROUNDS_PER_PASS = 16;
/** Buckets one round pages at most (one request); past that many shards a round starts at a random bucket. */
const ROUND_BUCKETS = 64;

export interface WakeReport {
  woken: number;
  pending: number;
  failed: number;
  parked: number;
  dropped: number;
}

interface Target {
  bucket: number;
  field: string;
  env: string;
  ns: string;
  id: string;
}

/**
 * The durability sweep, in rounds: each reads one page of every bucket's overwritten hash (one
 * request; each bucket resumes where its last page stopped, its cursor in its own slot), looks
 * the page's due ids up in the durability index (one request), wakes the durable ones at their
 * current owner (placed first when needed) with POST _wake and its epoch, and records every
 * outcome (one request). 200 clears the marker at or below that epoch; 202 checks again after
 * the wake timeout; anything else backs off and parks the entry after repeated failures. Ids
 * the durability index does not know are not durable: their marker is dropped, however many.
 * At most PINBOARD_SWEEP_BATCH wakes per pass, and only while the budget lasts: a due id left
 * unwoken is read again when its bucket's scan comes round.
 */
export async function sweepWakes(deps: WakesDeps, keepLease: () => Promise<boolean>): Promise<WakeReport> {
  const report: WakeReport = { woken: 0, pending: 0, failed: 0, parked: 0, dropped: 0 };
  try {
    await wakeRounds(deps, keepLease, report);
  } catch (err) {
    if (!budgetSpent(err)) throw err;
  }
  return report;
}

async function wakeRounds(deps: WakesDeps, keepLease: () => Promise<boolean>, report: WakeReport): Promise<void> {
  let buckets = roundBuckets(deps.config.shards);
  for (let round = 0; round < ROUNDS_PER_PASS && buckets.length > 0; round++) {
    if (!deps.budget.canSpend(WAKE_ROUND_COST) || !(await keepLease())) return;
    const pages = await wakePages(deps.redis, deps.keys, {
      buckets,
      count: deps.config.sweepBatch,
      limit: deps.config.sweepBatch,
    });
    const due = pages.flatMap(targetsOf);
    // Due ids of which none could be handled (the budget or the batch is used up): the rest waits for a later pass.
    if (due.length > 0 && (await wakeRound(deps, due, report)) === 0) return;
    buckets = pages.filter((p) => p.more).map((p) => p.bucket);
  }
}

/** Every bucket, or ROUND_BUCKETS consecutive ones from a random start. */
function roundBuckets(shards: number): number[] {
  const n = Math.min(shards, ROUND_BUCKETS);
  const start = shards > n ? Math.floor(Math.random() * shards) : 0;
  return Array.from({ length: n }, (_, i) => (start + i) % shards);
}

function targetsOf(page: WakePage): Target[] {
  return page.due.map((field) => {
    const [env = "", ns = "", id = ""] = field.split("\n");
    return { bucket: page.bucket, field, env, ns, id };
  });
}

/** One round's due ids: drops, wakes within the budget, then all their bookkeeping at once. Returns the ids handled. */
async function wakeRound(deps: WakesDeps, due: Target[], report: WakeReport): Promise<number> {
  const { durable, budget, config } = deps;
  const now = deps.now();
  const hostnames = await durable.redis.hmget(
    durable.keys.instances,
    due.map((t) => instanceMember(t.ns, t.id)),
  );
  const outcomes: Array<{ target: Target; outcome: WakeOutcome }> = [];
  let wakes = report.woken + report.pending + report.failed;
  for (const [i, target] of due.entries()) {
    const hostname = hostnames[i] ?? null;
    if (hostname === null) {
      outcomes.push({ target, outcome: { outcome: "drop" } });
      continue;
    }
    // Leaves one request for the bookkeeping below.
    if (wakes >= config.sweepBatch || !budget.canSpend(WAKE_COST + 1)) continue;
    wakes++;
    try {
      outcomes.push({ target, outcome: await wakeOne(deps, target, hostname, now) });
    } catch (err) {
      if (!budgetSpent(err)) throw err;
      break;
    }
  }
  await record(deps, outcomes, report);
  return outcomes.length;
}

async function wakeOne(deps: WakesDeps, t: Target, hostname: string, now: number): Promise<WakeOutcome> {
  const { config, redis, keys } = deps;
  const row = config.hostnameAware ? await redis.hget(keys.placements(t.bucket, t.env, t.ns), t.id) : null;
  const target = { ns: t.ns, id: t.id, hostname: config.hostnameAware ? row?.split("\n")[3] || hostname : "" };
  let placement: SweepPlacement;
  try {
    placement = await placeForSweep(deps, target);
  } catch (err) {
    // A sealed secret this node cannot open is logged by open; the call waits like a refusal.
    if (!(err instanceof Refusal || err instanceof UnreadableSecretError)) throw err;
    return { outcome: "pending", nextCheckAt: now + config.wakeTimeoutMs };
  }
  const answer = await callInstance(deps, placement, { ns: t.ns, id: t.id, action: "_wake" });
  if (answer.refused) await releaseRefused(deps, placement, t);
  if (answer.status === 200) return { outcome: "done", servedEpoch: placement.epoch };
  if (answer.status === 202) return { outcome: "pending", nextCheckAt: now + config.wakeTimeoutMs };
  return { outcome: "failed", backoffMs: WAKE_BACKOFF_MS, error: answer.error ?? `status ${answer.status}` };
}

/** The round's bookkeeping in one runMany (lua/wake-progress-2.lua each), counted in the report. */
async function record(
  deps: WakesDeps,
  outcomes: Array<{ target: Target; outcome: WakeOutcome }>,
  report: WakeReport,
): Promise<void> {
  if (outcomes.length === 0) return;
  const calls = outcomes.map(({ target, outcome }) =>
    wakeProgressCall(deps.keys, { bucket: target.bucket, field: target.field, parkAfter: WAKE_PARK_AFTER, ...outcome }),
  );
  const replies = await deps.redis.runMany(calls);
  outcomes.forEach(({ target, outcome }, i) => {
    if (outcome.outcome === "drop") report.dropped++;
    else if (outcome.outcome === "done") report.woken++;
    else if (outcome.outcome === "pending") report.pending++;
    else report.failed++;
    if (outcome.outcome === "failed" && parkedNow(replies[i])) {
      report.parked++;
      deps.log.warn("wake parked", { ns: target.ns, id: target.id, error: outcome.error });
    }
  });
}
