import { describe, expect, it } from "vitest";
import { perSecond, Series } from "../../src/console/page/series.ts";

/**
 * The console's rates from /registry/health's counters: the first sample seeds the series with
 * the average since the node started, later ones are the increase over the node's uptime between
 * two samples, and a node that restarted (its uptime or a counter went back) seeds it anew.
 */

describe("the console's rate series", () => {
  it("seeds with the average since the start, then rates between samples", () => {
    const series = new Series(["forward", "nack"], 3);
    series.add({ counts: { forward: 20 }, uptimeMs: 10_000 });
    expect(series.latest).toEqual({ rates: { forward: 2, nack: 0 }, seconds: 10, seed: true });
    series.add({ counts: { forward: 28, nack: 2 }, uptimeMs: 14_000 });
    expect(series.latest).toEqual({ rates: { forward: 2, nack: 0.5 }, seconds: 4, seed: false });
    expect(series.samples).toHaveLength(2);
    expect(series.taken).toBe(2);
  });

  it("seeds over at least a second, skips a sample too close to the last, keeps the last few", () => {
    const series = new Series(["forward"], 2);
    series.add({ counts: { forward: 3 }, uptimeMs: 0 });
    expect(series.latest?.rates.forward).toBe(3);
    series.add({ counts: { forward: 4 }, uptimeMs: 200 });
    expect(series.taken).toBe(1);
    series.add({ counts: { forward: 5 }, uptimeMs: 2000 });
    series.add({ counts: { forward: 9 }, uptimeMs: 4000 });
    expect(series.samples.map((s) => s.rates.forward)).toEqual([1, 2]);
  });

  it("starts over when the node restarted", () => {
    const series = new Series(["forward"], 10);
    series.add({ counts: { forward: 50 }, uptimeMs: 50_000 });
    series.add({ counts: { forward: 60 }, uptimeMs: 55_000 });
    series.add({ counts: { forward: 4 }, uptimeMs: 2_000 });
    expect(series.samples).toEqual([{ rates: { forward: 2 }, seconds: 2, seed: true }]);
  });

  it("writes a rate in a few digits", () => {
    expect([0, 0.004, 0.25, 3.42, 12.4].map(perSecond)).toEqual(["0", "0.004", "0.25", "3.4", "12"]);
  });
});
