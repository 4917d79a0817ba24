import { UnreadableSecretError } from "../auth/worker-secrets.ts";
import { parseInstanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import { Refusal } from "../placement/refusal.ts";
import { callInstance } from "./instance-calls.ts";
import { zremIfScore } from "./lua/index.ts";
import { placeForSweep, releaseRefused, type SweepPlacement } from "./place-for-sweep.ts";
import { budgetSpent, type SubrequestBudget } from "./subrequest-budget.ts";

/** What this module uses of the app's dependencies, and the pass's budget. */
export type AlarmsDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "fetch" | "log" | "runtime" | "metrics" | "durable" | "secrets"
> & { budget: SubrequestBudget };

/**
 * Requests of one alarm, as estimated: the hostname, the binding, the resolve, the call, and a
 * stale entry's removal or a refused placement's release.
 */
export const ALARM_COST = 5;

export interface AlarmReport {
  fired: number;
  running: number;
  stale: number;
  failed: number;
}

/**
 * Fires due alarms from the durability index: each due instance is placed when needed and its
 * owner called with POST _alarm (attestation, proxy secret, epoch). `fired: false` means nothing
 * was due, so the index entry is stale and goes (unless it was rescheduled meanwhile); 202 means
 * the owner's own timer is on it; 409 and failures are logged and retried on a later pass, and an
 * in-band refusal also releases the placement, so that pass places the instance anew. Runs
 * while each alarm still leaves `leave` (a fraction of the budget) to the stages after it.
 */
export async function sweepAlarms(
  deps: AlarmsDeps,
  keepLease: () => Promise<boolean>,
  leave: number,
): Promise<AlarmReport> {
  const { durable, config, budget } = deps;
  const report: AlarmReport = { fired: 0, running: 0, stale: 0, failed: 0 };
  if (!budget.canSpend(1 + ALARM_COST, leave)) return report;
  try {
    const due = await durable.redis.zrangeByScore(durable.keys.alarms, "-inf", deps.now(), config.sweepBatch);
    for (const [member, score] of due) {
      if (!budget.canSpend(ALARM_COST, leave) || !(await keepLease())) break;
      await fireAlarm(deps, member, score, report);
    }
  } catch (err) {
    if (!budgetSpent(err)) throw err;
  }
  return report;
}

async function fireAlarm(deps: AlarmsDeps, member: string, score: number, report: AlarmReport): Promise<void> {
  const { durable, config } = deps;
  const target = parseInstanceMember(member);
  if (!target) return;
  const hostname = config.hostnameAware ? ((await durable.redis.hget(durable.keys.instances, member)) ?? "") : "";
  let placement: SweepPlacement;
  try {
    placement = await placeForSweep(deps, { ...target, hostname });
  } catch (err) {
    // A sealed secret this node cannot open is logged by open; the call waits like a refusal.
    if (!(err instanceof Refusal || err instanceof UnreadableSecretError)) throw err;
    report.failed++;
    return;
  }
  const answer = await callInstance(deps, placement, { ...target, action: "_alarm" });
  if (answer.refused) await releaseRefused(deps, placement, target);
  const fired = (answer.body as { fired?: unknown } | null)?.fired;
  if (answer.status === 200 && fired === true) {
    report.fired++;
  } else if (answer.status === 200) {
    await zremIfScore(durable.redis, { key: durable.keys.alarms, member, score });
    report.stale++;
  } else if (answer.status === 202) {
    report.running++;
  } else {
    report.failed++;
    deps.log.warn("alarm not fired", { member, status: answer.status, error: answer.error });
  }
}
