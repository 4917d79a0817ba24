import { describe, expect, it } from "vitest";
import { chooseEdgeTiming, leaseViewEnd, parseRenewalLine } from "../../../scripts/chaos/lease-edge.ts";

/**
 * The timing of an edge-timed pause: half end within ±500 ms of TTL × 0.95 after the renewal was
 * sent, half 300–1800 ms past it (the numbers written out, not read from the module).
 */
const draws = (...values: number[]) => {
  let i = 0;
  return () => values[i++ % values.length]!;
};

describe("lease edge", () => {
  const renewal = { sentAt: 100_000, ttlMs: 3000, at: 100_004 };

  it("puts the worker's lease view's end at TTL × 0.95 after the renewal was sent", () => {
    expect(leaseViewEnd(renewal)).toBe(102_850);
    expect(leaseViewEnd({ ...renewal, ttlMs: 5000 })).toBe(104_750);
  });

  it("aims within ±500 ms of that end, before it and after it", () => {
    expect(chooseEdgeTiming(renewal, draws(0.2, 0))).toEqual({ edge: 102_850, resumeAt: 102_350, offsetMs: -500 });
    expect(chooseEdgeTiming(renewal, draws(0.2, 0.5)).offsetMs).toBe(0);
    expect(chooseEdgeTiming(renewal, draws(0.49, 0.999_999))).toEqual({
      edge: 102_850,
      resumeAt: 103_350,
      offsetMs: 500,
    });
    expect(chooseEdgeTiming(renewal, draws(0.5, 0))).toEqual({ edge: 102_850, resumeAt: 103_150, offsetMs: 300 });
    expect(chooseEdgeTiming(renewal, draws(0.9, 0.999_999)).offsetMs).toBe(1800);
    let late = 0;
    for (let i = 0; i < 200; i++) {
      const { edge, resumeAt, offsetMs } = chooseEdgeTiming(renewal, Math.random);
      if (offsetMs > 500) late++;
      expect(offsetMs >= -500 && offsetMs <= 1800).toBe(true);
      expect(resumeAt - edge).toBe(offsetMs);
    }
    expect(late).toBeGreaterThan(50);
    expect(late).toBeLessThan(150);
  });

  it("reads a renewal from the worker's lease line and nothing from other lines", () => {
    expect(parseRenewalLine('lease {"sentAt":1,"ttlMs":3000,"at":5}')).toEqual({ sentAt: 1, ttlMs: 3000, at: 5 });
    expect(parseRenewalLine('ready {"worker":"w1"}')).toBeUndefined();
    expect(parseRenewalLine("lease {broken")).toBeUndefined();
    expect(parseRenewalLine('lease {"sentAt":1,"ttlMs":0,"at":5}')).toBeUndefined();
  });
});
