import { describe, expect, it } from "vitest";
import { DeadlineTimer, type Expiring } from "../../src/node/data-plane/deadline-timer.ts";

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
