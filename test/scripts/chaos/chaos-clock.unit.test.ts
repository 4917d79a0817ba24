import { describe, expect, it } from "vitest";
import {
  clockFromEnv,
  clockSettingSchema,
  offsetAt,
  REAL_CLOCK,
  rateInsideMargin,
  rateOverTrusts,
  realAt,
  skewedNow,
  withRate,
  withStep,
} from "../../../scripts/chaos/chaos-clock.ts";

/** The chaos worker's injected clock: an offset and a rate, a function of real time alone. */

describe("chaos clock", () => {
  it("reads real time unchanged by default", () => {
    expect(skewedNow(REAL_CLOCK, 1_000_000)).toBe(1_000_000);
  });

  it("runs at its rate from its anchor, with its offset there", () => {
    const setting = { offsetMs: 500, rate: 0.8, since: 10_000 };
    expect(skewedNow(setting, 10_000)).toBe(10_500);
    expect(skewedNow(setting, 20_000)).toBe(18_500); // 10 s of real time are 8 s of its own
  });

  it("changes rate with no jump, and keeps the drift when it goes back to rate 1", () => {
    const fast = withRate(REAL_CLOCK, 1.2, 5000);
    expect(skewedNow(fast, 5000)).toBe(5000);
    expect(offsetAt(fast, 10_000)).toBeCloseTo(1000);
    const healed = withRate(fast, 1, 10_000);
    expect(skewedNow(healed, 10_000)).toBeCloseTo(skewedNow(fast, 10_000));
    expect(offsetAt(healed, 60_000)).toBeCloseTo(1000);
  });

  it("steps by the step, at its rate, and steps back", () => {
    const stepped = withStep(withRate(REAL_CLOCK, 0.9, 0), -3000, 1000);
    expect(skewedNow(stepped, 1000)).toBeCloseTo(900 - 3000);
    expect(stepped.rate).toBe(0.9);
    const back = withStep(stepped, 3000, 2000);
    expect(skewedNow(back, 2000)).toBeCloseTo(1800);
  });

  it("tells the real time at which it reads a value", () => {
    const setting = { offsetMs: -700, rate: 1.03, since: 4000 };
    for (const real of [0, 4000, 12_345]) expect(realAt(setting, skewedNow(setting, real))).toBeCloseTo(real);
  });

  it("names the rates that let the lease guard trust past the lease: slower than 0.95", () => {
    expect([0.8, 0.9, 0.949].map(rateOverTrusts)).toEqual([true, true, true]);
    expect([0.95, 1, 1.2].map(rateOverTrusts)).toEqual([false, false, false]);
    expect([0.97, 1.03].map(rateInsideMargin)).toEqual([true, true]);
    expect([0.85, 0.95, 1.05, 1.2].map(rateInsideMargin)).toEqual([false, false, false, false]);
  });

  it("starts from CHAOS_CLOCK_OFFSET_MS and CHAOS_CLOCK_RATE, and refuses a rate that is not positive", () => {
    expect(clockFromEnv({ CHAOS_CLOCK_OFFSET_MS: "-2000", CHAOS_CLOCK_RATE: "1.02" }, 50)).toEqual({
      offsetMs: -2000,
      rate: 1.02,
      since: 50,
    });
    expect(clockFromEnv({}, 7)).toEqual({ offsetMs: 0, rate: 1, since: 7 });
    expect(() => clockFromEnv({ CHAOS_CLOCK_RATE: "0" }, 0)).toThrow();
    expect(clockSettingSchema.safeParse({ offsetMs: 1, rate: "x", since: 0 }).success).toBe(false);
  });
});
