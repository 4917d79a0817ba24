import { UnreadableSecretError } from "../auth/worker-secrets.ts";
import { instanceMember } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps.ts";
import { Refusal } from "../placement/refusal.ts";
import type { Resolution } from "../placement/resolver.ts";
import { callInstance } from "./instance-calls.ts";
import { type WakeOutcome, wakeProgress } from "./lua/index.ts";
import { placeForSweep } from "./place-for-sweep.ts";

/** What this module uses of the app's dependencies. */
export type WakesDeps = Pick<
  AppDeps,
  "config" | "redis" | "keys" | "now" | "fetch" | "log" | "runtime" | "metrics" | "durable" | "secrets"
>;

/** Failed wakes retry after 5 s, doubling; the fifth failure parks the entry for operators. */
export const WAKE_BACKOFF_MS = 5000;
export const WAKE_PARK_AFTER = 5;

export interface WakeReport {
  woken: number;
  pending: number;
  failed: number;
  parked: number;
  dropped: number;
}

interface WakeState {
  attempts: number;
  nextAt: number;
  parked: boolean;
}

function parseState(raw: string | undefined): WakeState {
  if (!raw) return { attempts: 0, nextAt: 0, parked: false };
  const [attempts = "0", nextAt = "0", parked = "0"] = raw.split("\n");
  return { attempts: Number(attempts), nextAt: Number(nextAt), parked: parked === "1" };
}

/**
 * The durability sweep: every overwritten-listed id is woken at its current owner (placed
 * first when needed) with POST _wake and its epoch. 200 clears the marker at or below that
 * epoch; 202 checks again after the wake timeout; anything else backs off and parks the entry
 * after repeated failures. Ids the durability index does not know are not durable: their marker
 * is dropped. At most `budget` wakes per pass, starting at a rotating bucket.
 */
export async function sweepWakes(
  deps: WakesDeps,
  budget: number,
  startBucket: number,
  keepLease: () => Promise<boolean>,
): Promise<WakeReport> {
  const { keys, redis, durable, config } = deps;
  const report: WakeReport = { woken: 0, pending: 0, failed: 0, parked: 0, dropped: 0 };
  const now = await redis.timeMs();
  const progress = (bucket: number, field: string, outcome: WakeOutcome) =>
    wakeProgress(redis, keys, { bucket, field, parkAfter: WAKE_PARK_AFTER, ...outcome });

  for (let i = 0; i < config.shards && budget > 0; i++) {
    const b = (startBucket + i) % config.shards;
    const markers = await redis.hgetall(keys.overwritten(b));
    if (Object.keys(markers).length === 0) continue;
    const states = await redis.hgetall(keys.wakes(b));
    for (const field of Object.keys(markers)) {
      const state = parseState(states[field]);
      if (state.parked || state.nextAt > now) continue;
      if (budget-- <= 0 || !(await keepLease())) return report;
      const [env = "", ns = "", id = ""] = field.split("\n");
      const hostname = await durable.redis.hget(durable.keys.instances, instanceMember(ns, id));
      if (hostname === null) {
        await progress(b, field, { outcome: "drop" });
        report.dropped++;
        continue;
      }
      const row = await redis.hget(keys.placements(b, env, ns), id);
      const target = { ns, id, hostname: config.hostnameAware ? row?.split("\n")[3] || hostname : "" };
      let placement: Resolution;
      try {
        placement = await placeForSweep(deps, target);
      } catch (err) {
        // A sealed secret this node cannot open is logged by open; the call waits like a refusal.
        if (!(err instanceof Refusal || err instanceof UnreadableSecretError)) throw err;
        await progress(b, field, { outcome: "pending", nextCheckAt: now + config.wakeTimeoutMs });
        report.pending++;
        continue;
      }
      const answer = await callInstance(deps, placement, { ns, id, action: "_wake" });
      if (answer.status === 200) {
        await progress(b, field, { outcome: "done", servedEpoch: placement.epoch });
        report.woken++;
      } else if (answer.status === 202) {
        await progress(b, field, { outcome: "pending", nextCheckAt: now + config.wakeTimeoutMs });
        report.pending++;
      } else {
        const error = answer.error ?? `status ${answer.status}`;
        const parked = await progress(b, field, { outcome: "failed", backoffMs: WAKE_BACKOFF_MS, error });
        report.failed++;
        if (parked) {
          report.parked++;
          deps.log.warn("wake parked", { ns, id, error });
        }
      }
    }
  }
  return report;
}
