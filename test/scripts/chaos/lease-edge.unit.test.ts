import { describe, expect, it } from "vitest";
import { chooseEdgeTiming, EDGE_SPREAD_MS, leaseViewEnd, parseRenewalLine } from "../../../scripts/chaos/lease-edge.ts";

/** The timing of an edge-timed pause: it ends within ±500 ms of TTL × 0.95 after the renewal was sent. */

describe("lease edge", () => {
  const renewal = { sentAt: 100_000, ttlMs: 3000, at: 100_004 };

  it("puts the worker's lease view's end at TTL × 0.95 after the renewal was sent", () => {
    expect(leaseViewEnd(renewal)).toBe(102_850);
    expect(leaseViewEnd({ ...renewal, ttlMs: 5000 })).toBe(104_750);
  });

  it("aims within ±500 ms of that end, before it and after it", () => {
    expect(chooseEdgeTiming(renewal, () => 0)).toEqual({ edge: 102_850, resumeAt: 102_350, offsetMs: -500 });
    expect(chooseEdgeTiming(renewal, () => 0.5).offsetMs).toBe(0);
    expect(chooseEdgeTiming(renewal, () => 0.999_999)).toEqual({ edge: 102_850, resumeAt: 103_350, offsetMs: 500 });
    for (let i = 0; i < 50; i++) {
      const { edge, resumeAt, offsetMs } = chooseEdgeTiming(renewal, Math.random);
      expect(Math.abs(offsetMs)).toBeLessThanOrEqual(EDGE_SPREAD_MS);
      expect(resumeAt - edge).toBe(offsetMs);
    }
  });

  it("reads a renewal from the worker's lease line and nothing from other lines", () => {
    expect(parseRenewalLine('lease {"sentAt":1,"ttlMs":3000,"at":5}')).toEqual({ sentAt: 1, ttlMs: 3000, at: 5 });
    expect(parseRenewalLine('ready {"worker":"w1"}')).toBeUndefined();
    expect(parseRenewalLine("lease {broken")).toBeUndefined();
    expect(parseRenewalLine('lease {"sentAt":1,"ttlMs":0,"at":5}')).toBeUndefined();
  });
});
