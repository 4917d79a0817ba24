import { constants, PerformanceObserver } from "node:perf_hooks";
import { describe, expect, it } from "vitest";
import { DeadlineTimer, type Expiring } from "../../../../src/runtime/node/transport/deadline-timer.ts";

/** Expired items by name, with the sweep's clock when each expired. */
type Log = Array<{ name: string; at: number }>;

function item(sweep: DeadlineTimer<Expiring>, inMs: number, log: Log, name: string): Expiring {
  return { expiresAt: sweep.now() + inMs, expire: () => void log.push({ name, at: sweep.now() }) };
}

describe("DeadlineTimer", () => {
  it("expires each item once, not before its deadline, and never a deleted one", async () => {
    const sweep = new DeadlineTimer<Expiring>(10);
    const log: Log = [];
    const early = item(sweep, 30, log, "early");
    const late = item(sweep, 1500, log, "late");
    const deleted = item(sweep, 30, log, "deleted");
    for (const i of [early, late, deleted]) sweep.add(i);
    sweep.delete(deleted);
    await expect.poll(() => log.map((e) => e.name)).toEqual(["early"]);
    expect(sweep.size).toBe(1);
    await expect.poll(() => log.map((e) => e.name), { timeout: 5000 }).toEqual(["early", "late"]);
    expect(log[0]!.at).toBeGreaterThanOrEqual(early.expiresAt);
    expect(log[1]!.at).toBeGreaterThanOrEqual(late.expiresAt);
    expect(sweep.size).toBe(0);
  });

  it("starts again after it went idle", async () => {
    const sweep = new DeadlineTimer<Expiring>(5);
    const log: Log = [];
    sweep.add(item(sweep, 10, log, "first"));
    await expect.poll(() => log.length).toBe(1);
    await new Promise((r) => setTimeout(r, 50));
    sweep.add(item(sweep, 10, log, "second"));
    await expect.poll(() => log.map((e) => e.name)).toEqual(["first", "second"]);
  });
});

/** Young-generation collections (scavenges) while `work` runs, as Node's GC observer reports them. */
async function scavengesDuring(work: () => void): Promise<number> {
  const seen: number[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries())
      if (
        (entry as PerformanceEntry & { detail?: { kind?: number } }).detail?.kind ===
        constants.NODE_PERFORMANCE_GC_MINOR
      )
        seen.push(entry.startTime);
  });
  observer.observe({ entryTypes: ["gc"] });
  const from = performance.now();
  work();
  const to = performance.now();
  await new Promise((resolve) => setTimeout(resolve, 50));
  observer.disconnect();
  return seen.filter((at) => at >= from && at <= to).length;
}

describe("DeadlineTimer's list", () => {
  it("adds and deletes without allocating: a million forwards' worth in one young generation", async () => {
    const sweep = new DeadlineTimer<Expiring>(1000);
    const items = [item(sweep, 60_000, [], "a"), item(sweep, 60_000, [], "b")];
    const cycle = () => {
      for (let i = 0; i < 1_000_000; i++) {
        sweep.add(items[0]!);
        sweep.add(items[1]!);
        sweep.delete(items[i & 1]!);
        sweep.delete(items[(i + 1) & 1]!);
      }
    };
    cycle(); // compiled before it is measured
    // A Set here re-allocates its table on each emptying delete: dozens of scavenges for this loop.
    expect(await scavengesDuring(cycle)).toBeLessThanOrEqual(1);
    expect(sweep.size).toBe(0);
  });

  it("keeps its count and order through deletes in the middle, at the ends and of strangers", async () => {
    const sweep = new DeadlineTimer<Expiring>(5);
    const log: Log = [];
    const [a, b, c, d] = ["a", "b", "c", "d"].map((name) => item(sweep, 20, log, name));
    for (const i of [a, b, c, d]) sweep.add(i!);
    sweep.add(b!); // already pending: nothing changes
    expect(sweep.size).toBe(4);
    sweep.delete(c!); // middle
    sweep.delete(d!); // the head (added last)
    sweep.delete(d!); // twice
    sweep.delete(item(sweep, 20, log, "stranger")); // never added
    expect(sweep.size).toBe(2);
    await expect.poll(() => log.map((e) => e.name).sort()).toEqual(["a", "b"]);
    expect(sweep.size).toBe(0);
  });
});
