import { describe, expect, it } from "vitest";
import { seededRandom } from "../../scripts/seeded-random.ts";
import {
  BIN_COUNT,
  BIN_UPPER_MS,
  binOf,
  ceilSignificant,
  HIGHEST_MS,
  LOWEST_MS,
  percentileMs,
} from "../../src/metrics/latency-bins.ts";

/**
 * The log-scale latency bins behind /registry/history's p50/p99: every duration lands in the bin
 * whose bounds hold it, and a percentile reads never below the true nearest-rank value and at
 * most 10% above it.
 */

/** The nearest-rank percentile: the smallest sample with at least `percent`% of them at or below it. */
function nearestRank(samples: number[], percent: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil((sorted.length * percent) / 100) - 1]!;
}

function histogramOf(samples: number[]): { counts: Uint32Array; max: number } {
  const counts = new Uint32Array(BIN_COUNT);
  for (const ms of samples) counts[binOf(ms)]!++;
  return { counts, max: Math.max(0, ...samples) };
}

describe("latency bins", () => {
  it("grow by at most 9% from 0.1 ms to 10 minutes, with an underflow and an overflow bin", () => {
    expect(BIN_UPPER_MS[0]).toBe(LOWEST_MS);
    expect(BIN_UPPER_MS[BIN_COUNT - 2]).toBeGreaterThanOrEqual(HIGHEST_MS);
    expect(BIN_UPPER_MS[BIN_COUNT - 1]).toBe(Number.POSITIVE_INFINITY);
    for (let i = 1; i < BIN_COUNT - 1; i++) {
      expect(BIN_UPPER_MS[i]! / BIN_UPPER_MS[i - 1]!).toBeLessThanOrEqual(1.09 + 1e-12);
    }
  });

  it("put each duration in the bin whose bounds hold it, bounds included", () => {
    const next = seededRandom(1);
    const durations = [0, -3, Number.NaN, LOWEST_MS, HIGHEST_MS * 2, ...Array.from(BIN_UPPER_MS).slice(0, -1)];
    for (let i = 0; i < 5000; i++) durations.push(LOWEST_MS * 10 ** (next() * 7));
    const misplaced = durations.filter((ms) => {
      const bin = binOf(ms);
      if (!(bin >= 0 && bin < BIN_COUNT)) return true;
      if (ms >= LOWEST_MS && !(BIN_UPPER_MS[bin - 1]! <= ms)) return true;
      return ms >= 0 && !(BIN_UPPER_MS[bin]! > ms);
    });
    expect(misplaced).toEqual([]);
    expect(binOf(Number.NaN)).toBe(0);
    expect(binOf(HIGHEST_MS * 2)).toBe(BIN_COUNT - 1);
  });

  it("read p50 and p99 never below the true nearest-rank value and at most 10% above it", () => {
    const next = seededRandom(7);
    for (let round = 0; round < 300; round++) {
      const n = 1 + Math.floor(next() * (round < 100 ? 12 : 2000));
      // Log-uniform from 0.1 ms to 100 s, and whole milliseconds as Date.now measures them.
      const samples = Array.from({ length: n }, () => LOWEST_MS * 10 ** (next() * 6));
      if (round % 2 === 0) for (let i = 0; i < n; i++) samples[i] = Math.round(samples[i]!);
      const { counts, max } = histogramOf(samples);
      for (const percent of [50, 99]) {
        const truth = nearestRank(samples, percent);
        const read = percentileMs(counts, 0, n, percent, max)!;
        expect(read, `p${percent} of ${n}`).toBeGreaterThanOrEqual(truth);
        expect(read, `p${percent} of ${n}`).toBeLessThanOrEqual(Math.max(truth * 1.1, LOWEST_MS));
      }
    }
  });

  it("read null without samples, the largest sample above the top bin, and 0 for 0 ms", () => {
    expect(percentileMs(new Uint32Array(BIN_COUNT), 0, 0, 50, 0)).toBeNull();
    const over = histogramOf([HIGHEST_MS * 3, HIGHEST_MS * 5]);
    expect(percentileMs(over.counts, 0, 2, 99, over.max)).toBe(HIGHEST_MS * 5);
    const instant = histogramOf([0, 0, 0]);
    expect(percentileMs(instant.counts, 0, 3, 50, instant.max)).toBe(0);
    // The rank of p99 among 100 samples is the 99th, not the 100th.
    const ranked = histogramOf([...Array.from({ length: 99 }, () => 1), 1000]);
    expect(percentileMs(ranked.counts, 0, 100, 99, ranked.max)).toBeLessThanOrEqual(1.1);
  });

  it("round up to 4 significant digits", () => {
    expect(ceilSignificant(12.3456)).toBe(12.35);
    expect(ceilSignificant(123_456)).toBe(123_500);
    expect(ceilSignificant(0.012_341)).toBe(0.012_35);
    expect(ceilSignificant(7)).toBe(7);
    expect(ceilSignificant(0)).toBe(0);
  });
});
