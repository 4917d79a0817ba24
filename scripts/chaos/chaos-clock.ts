import { z } from "zod";

/**
 * A worker process's injected clock (the worker library's `now` option): the real clock shifted
 * by an offset and running at a rate. A setting is a function of real time alone, so the harness
 * and the worker agree on it, and a worker restarted with the same setting file keeps its clock:
 *
 *   now(real) = real + offsetMs + (real − since) × (rate − 1)
 *
 * The lease guard (src/pinned/lease.ts) keeps a margin of 5 % of the TTL for clock rate: a worker
 * clock running slower than 0.95 lets the guard trust its lease past Pinboard's end of it. A fast
 * clock only makes it give up early; a constant offset is invisible to it (it measures intervals),
 * but a step of the clock while no renewal comes is a rate change squeezed into an instant.
 */

export interface ClockSetting {
  /** The clock's lead over real time at `since` (ms; negative: behind). */
  offsetMs: number;
  /** Clock milliseconds per real millisecond. */
  rate: number;
  /** The real time (ms) the setting is anchored at. */
  since: number;
}

export const REAL_CLOCK: ClockSetting = { offsetMs: 0, rate: 1, since: 0 };

/** The lease guard's margin for clock rate (src/pinned/lease.ts marginMs): 5 % of the TTL. */
export const LEASE_RATE_MARGIN = 0.05;

export const clockSettingSchema = z.object({
  offsetMs: z.number(),
  rate: z.number().positive(),
  since: z.number(),
});

export function skewedNow(setting: ClockSetting, realMs: number): number {
  return realMs + setting.offsetMs + (realMs - setting.since) * (setting.rate - 1);
}

/** How far the clock is ahead of real time at `realMs`. */
export function offsetAt(setting: ClockSetting, realMs: number): number {
  return skewedNow(setting, realMs) - realMs;
}

/** The real time at which the clock reads `skewedMs`. */
export function realAt(setting: ClockSetting, skewedMs: number): number {
  return (skewedMs - setting.offsetMs + setting.since * (setting.rate - 1)) / setting.rate;
}

/** From `realMs` on, the clock runs at `rate`, with no jump at `realMs`. */
export function withRate(setting: ClockSetting, rate: number, realMs: number): ClockSetting {
  return { offsetMs: offsetAt(setting, realMs), rate, since: realMs };
}

/** At `realMs` the clock jumps by `stepMs` (negative: back) and goes on at its rate. */
export function withStep(setting: ClockSetting, stepMs: number, realMs: number): ClockSetting {
  return { offsetMs: offsetAt(setting, realMs) + stepMs, rate: setting.rate, since: realMs };
}

/**
 * Whether a worker clock at `rate` may keep the lease guard trusting past the lease: it lapses at
 * 0.95 × TTL of its own time after the renewal was sent, which is TTL / rate × 0.95 of real time.
 */
export function rateOverTrusts(rate: number): boolean {
  return rate < 1 - LEASE_RATE_MARGIN;
}

/** Whether `rate` is inside the margin the lease guard states (|rate − 1| < 5 %). */
export function rateInsideMargin(rate: number): boolean {
  return Math.abs(rate - 1) < LEASE_RATE_MARGIN;
}

/** The start setting from the environment: CHAOS_CLOCK_OFFSET_MS and CHAOS_CLOCK_RATE, from `realMs`. */
export function clockFromEnv(env: Record<string, string | undefined>, realMs: number): ClockSetting {
  return clockSettingSchema.parse({
    offsetMs: Number(env.CHAOS_CLOCK_OFFSET_MS ?? 0),
    rate: Number(env.CHAOS_CLOCK_RATE ?? 1),
    since: realMs,
  });
}
