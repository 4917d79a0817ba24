import { describe, expect, it } from "vitest";
import type { Fault } from "../../../scripts/chaos/history.ts";
import { choosePair, compatible, compatiblePairs, FAULT_SCOPES } from "../../../scripts/chaos/overlap.ts";

/** Which faults the nemesis may hold at once: different scopes, at most one global, no kill with a clock fault. */

type Kind = Fault["kind"];
const ALL = Object.keys(FAULT_SCOPES) as Kind[];

describe("overlapping faults", () => {
  it("pairs faults of different scopes", () => {
    expect(compatible("pause-worker", "proxy-worker-store")).toBe(true);
    expect(compatible("kill-worker", "proxy-pinboard-redis")).toBe(true);
    expect(compatible("pause-worker-edge", "clock-rate-past-margin")).toBe(true);
    expect(compatible("proxy-heal-inflight", "kill-pinboard")).toBe(true);
  });

  it("never pairs two faults of one scope: two on a process, two clocks, two links, two global", () => {
    expect(compatible("kill-worker", "pause-worker")).toBe(false);
    expect(compatible("clock-skew", "clock-rate")).toBe(false);
    expect(compatible("proxy-worker-store", "proxy-heal-inflight")).toBe(false);
    expect(compatible("kill-pinboard", "proxy-pinboard-redis")).toBe(false);
    expect(compatible("redis-restart-empty", "cluster-failover")).toBe(false);
  });

  it("never pairs a kill with a clock fault", () => {
    expect(compatible("kill-worker", "clock-skew")).toBe(false);
    expect(compatible("clock-rate", "kill-worker")).toBe(false);
  });

  it("lists each compatible pair once, and chooses among them", () => {
    const pairs = compatiblePairs(ALL);
    const keys = pairs.map(([a, b]) => [a, b].sort().join("+"));
    expect(new Set(keys).size).toBe(pairs.length);
    for (const [a, b] of pairs) expect(compatible(a, b)).toBe(true);
    expect(pairs.some(([a, b]) => FAULT_SCOPES[a] === "global" && FAULT_SCOPES[b] === "global")).toBe(false);
    expect(choosePair(["kill-worker", "proxy-worker-store"], () => 0.3)).toEqual(["kill-worker", "proxy-worker-store"]);
    expect(choosePair(["kill-worker", "pause-worker", "kill-worker"], () => 0.3)).toBeUndefined();
  });
});
