import { readFileSync } from "node:fs";
import { Lease } from "../../src/pinned/lease.ts";
import { type ClockSetting, clockFromEnv, clockSettingSchema, realAt, skewedNow } from "./chaos-clock.ts";

/**
 * The chaos worker's side of the clock faults and of the edge-timed pauses:
 *  - its clock (the library's `now` option) starts from CHAOS_CLOCK_OFFSET_MS / CHAOS_CLOCK_RATE,
 *    or from the setting in CHAOS_CLOCK_FILE when that file exists, and reads the file again on
 *    SIGUSR2: the harness writes it and signals, so the clock changes while the worker runs;
 *  - every lease renewal is printed on stdout as `lease {"sentAt":…,"ttlMs":…,"at":…}` in real
 *    milliseconds (sentAt: when the renewing call left; at: when its answer was applied), so the
 *    harness knows, to the millisecond, when the worker's own view of its lease ends.
 */

export interface WorkerClock {
  now: () => number;
  setting: () => ClockSetting;
}

export function installWorkerClock(env: Record<string, string | undefined>): WorkerClock {
  let setting = clockFromEnv(env, Date.now());
  const file = env.CHAOS_CLOCK_FILE;
  const load = () => {
    if (!file) return;
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch {
      return; // no fault yet: the start setting holds
    }
    setting = clockSettingSchema.parse(JSON.parse(text));
    console.log(`clock ${JSON.stringify(setting)}`);
  };
  load();
  process.on("SIGUSR2", load);
  return { now: () => skewedNow(setting, Date.now()), setting: () => setting };
}

/** Prints each renewal the library's lease takes, in real time (whatever the worker's clock says). */
export function reportLeaseRenewals(clock: WorkerClock): void {
  const renewed = Lease.prototype.renewed;
  Lease.prototype.renewed = function (this: Lease, sentAt: number, ttlMs: unknown): boolean {
    const lapsedBefore = renewed.call(this, sentAt, ttlMs);
    const entry = { sentAt: Math.round(realAt(clock.setting(), sentAt)), ttlMs: this.ttlMs, at: Date.now() };
    console.log(`lease ${JSON.stringify(entry)}`);
    return lapsedBefore;
  };
}
