import { describe, expect, it } from "vitest";
import { checkHistory } from "../../../scripts/chaos/checker.ts";
import type { History, Operation, Served } from "../../../scripts/chaos/history.ts";
import { availabilityPerSecond } from "../../../scripts/chaos/statistics.ts";
import { append, cleanHistory, history, incr, killWorker, read } from "./histories.ts";

/** The checker's statistics: counts, availability per second, recovery after each fault, the SLO. */

describe("counts", () => {
  it("counts operations by kind and outcome, faults by kind, served entries and keys", () => {
    const h = cleanHistory();
    h.faults.push({ kind: "proxy-worker-store", target: "w2-store", mode: "drop", start: 3000, healed: 4000 });
    const { stats } = checkHistory(h);
    expect(stats.operations).toEqual({
      total: 14,
      byKind: {
        append: { ok: 3, fail: 1, info: 1 },
        read: { ok: 5, fail: 0, info: 0 },
        incr: { ok: 3, fail: 0, info: 1 },
      },
      byOutcome: { ok: 11, fail: 1, info: 2 },
    });
    expect(stats.faults).toEqual({ total: 2, byKind: { "kill-worker": 1, "proxy-worker-store": 1 } });
    expect(stats.served).toBe(4);
    expect(stats.keys).toBe(2);
  });
});

describe("availability per second", () => {
  it("gives each whole second of the run its ok share of the operations that ended in it", () => {
    const operations = [
      append("a", { id: 1, start: 900, end: 1100 }),
      append("b", { id: 2, start: 1000, end: 1999, outcome: "fail" }),
      append("c", { id: 3, start: 3000, end: 3001 }),
      append("d", { id: 4, start: 3000, end: 3500, outcome: "info" }),
      append("e", { id: 5, start: 3500, end: 3999 }),
      append("f", { id: 6, start: 3900, end: 4200 }),
    ];
    expect(availabilityPerSecond({ operations, started: 1000, ended: 4000 })).toEqual([
      { second: 0, ok: 1, total: 2, ratio: 0.5 },
      { second: 1, ok: 0, total: 0, ratio: null },
      // The operation that ended after the run counts in its last second.
      { second: 2, ok: 3, total: 4, ratio: 0.75 },
    ]);
  });
});

describe("recovery", () => {
  /** Four killed owners; key k<i> is served again `delays[i]` ms after its fault. */
  function recoveries(delays: number[], leaseTtlMs: number): History {
    const operations: Operation[] = [];
    const faults = delays.map((delay, i) => {
      const key = `/lists/k${i}`;
      const start = 1000 * (i + 1);
      operations.push(read([], { id: i, key, start: start + 1, end: start + delay }));
      operations.push(read([], { id: 100 + i, key, start: start - 10, end: start + delay + 5 }));
      return killWorker(`w${i}`, start, [key]);
    });
    const finalReads = Object.fromEntries(delays.map((_, i) => [`/lists/k${i}`, []]));
    return history({ operations, faults, finalReads, leaseTtlMs });
  }

  it("measures each fault-key from the fault to the first answer started after it, with p50, p99 and max", () => {
    const { recovery } = checkHistory(recoveries([300, 100, 4000, 200], 1000)).stats;
    expect(recovery.perFault.map((f) => [f.target, f.maxMs])).toEqual([
      ["w0", 300],
      ["w1", 100],
      ["w2", 4000],
      ["w3", 200],
    ]);
    expect(recovery.perFault[0]!.keys).toEqual([{ key: "/lists/k0", recoveryMs: 300 }]);
    expect(recovery).toMatchObject({ measured: 4, p50Ms: 200, p99Ms: 4000, maxMs: 4000, limitMs: 3000 });
  });

  it("lists each fault-key slower than lease + 2 s as an SLO violation, not a correctness one", () => {
    const verdict = checkHistory(recoveries([300, 100, 4000, 200], 1000));
    expect(verdict.valid).toBe(true);
    expect(verdict.sloMet).toBe(false);
    expect(verdict.sloViolations).toEqual([
      {
        kind: "slow-recovery",
        key: "/lists/k2",
        fault: { kind: "kill-worker", target: "w2", start: 3000 },
        recoveryMs: 4000,
        limitMs: 3000,
        detail: "kill-worker of w2 at 3000: /lists/k2 took 4000 ms to be served again (limit 3000 ms)",
      },
    ]);
    expect(checkHistory(recoveries([300, 100, 4000, 200], 2001)).sloMet).toBe(true);
  });

  it("measures a fault held with another (overlap) but counts no SLO violation for it", () => {
    const h = recoveries([300, 100, 4000, 200], 1000);
    h.faults[2] = { ...h.faults[2]!, overlap: 1 };
    const verdict = checkHistory(h);
    expect(verdict.stats.recovery.perFault[2]!.maxMs).toBe(4000);
    expect(verdict.stats.recovery.maxMs).toBe(4000);
    expect(verdict.sloViolations).toEqual([]);
    expect(verdict.sloMet).toBe(true);
  });

  it("takes the earliest answer, not the answer of the earliest start (a request stuck on the dead owner)", () => {
    const key = "/lists/a";
    const operations = [
      read([], { id: 1, key, start: 1000, end: 31_000 }),
      read([], { id: 2, key, start: 1200, end: 1800 }),
      read([], { id: 3, key, start: 1300, end: 2500 }),
    ];
    const { stats } = checkHistory(
      history({ operations, faults: [killWorker("w1", 1000, [key])], finalReads: { [key]: [] } }),
    );
    expect(stats.recovery.maxMs).toBe(800);
  });

  it("has no quantiles when no fault hit keys", () => {
    const { recovery } = checkHistory(
      history({ faults: [{ kind: "kill-pinboard", target: "0", start: 1, healed: 2 }] }),
    ).stats;
    expect(recovery).toMatchObject({ perFault: [], measured: 0, p50Ms: null, p99Ms: null, maxMs: null });
  });
});

describe("scale", () => {
  /** 200k operations on 1000 lists and 1000 counters, and a served entry for each, all consistent. */
  function bigHistory(): History {
    const operations: Operation[] = [];
    const served: Served[] = [];
    const finalReads: Record<string, string[]> = {};
    let id = 0;
    for (let k = 0; k < 1000; k++) {
      const key = `/lists/k${k}`;
      const list: string[] = [];
      for (let i = 0; i < 50; i++) {
        const t = i * 20;
        const epoch = String(1 + Math.floor(i / 25));
        list.push(`${key}:${i}`);
        operations.push(append(`${key}:${i}`, { id: id++, key, start: t, end: t + 5, epoch }));
        operations.push(read(list.slice(), { id: id++, key, start: t + 6, end: t + 15, epoch }));
        served.push({ worker: `w${epoch}`, key, epoch, at: t + 3, kind: "append" });
      }
      finalReads[key] = list;
      for (let i = 0; i < 100; i++)
        operations.push(incr(i + 1, { id: id++, key: `/counters/c${k}`, start: i * 10, end: i * 10 + 5 }));
    }
    return history({ operations, served, finalReads, started: 0, ended: 1000 });
  }

  it("checks 200k operations in seconds", () => {
    const h = bigHistory();
    expect(h.operations).toHaveLength(200_000);
    const began = performance.now();
    const verdict = checkHistory(h);
    const tookMs = performance.now() - began;
    expect(verdict.violations).toEqual([]);
    expect(tookMs).toBeLessThan(10_000);
  });
});
