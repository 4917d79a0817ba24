import { describe, expect, it } from "vitest";
import { checkAlarms } from "../../../scripts/chaos/check-alarms.ts";
import { checkHistory } from "../../../scripts/chaos/checker.ts";
import type { AlarmFired, AlarmHistory, AlarmSet } from "../../../scripts/chaos/history-alarms.ts";
import { type ViolationKind, ViolationLog } from "../../../scripts/chaos/verdict.ts";
import { cleanHistory } from "./histories.ts";

/** The alarms' checks on small hand-made histories: a clean one passes, each anomaly trips its check. */

const KEY = "/alarms/a0";

function set(alarm: string, epoch: string, worker: string, start: number, end: number): AlarmSet {
  return { alarm, key: KEY, node: 0, due: start + 100, start, end, outcome: "ok", epoch, worker };
}

function fired(
  alarm: string,
  epoch: string,
  worker: string,
  at: number,
  phase: AlarmFired["phase"] = "fired",
): AlarmFired {
  return { worker, key: KEY, epoch, alarm, phase, retryCount: 0, at };
}

/**
 * w1 holds the key at epoch 10 and fires al0; al1 is set on w1, w1 dies before firing it, w2
 * takes over at epoch 20 (a client sees it at 300) and fires al1 twice at that epoch (its first
 * write failed: a retry, allowed), then commits it.
 */
function clean(): AlarmHistory {
  return {
    sets: [
      set("al0", "10", "w1", 0, 10),
      set("al1", "10", "w1", 20, 30),
      set("al2", "20", "w2", 290, 300),
      { alarm: "al3", key: KEY, node: 1, due: 500, start: 400, end: 9000, outcome: "info", error: "timeout" },
    ],
    fired: [
      fired("al0", "10", "w1", 110),
      fired("al0", "10", "w1", 112, "committed"),
      fired("al1", "20", "w2", 310),
      fired("al1", "20", "w2", 1320),
      fired("al2", "20", "w2", 1320),
      fired("al1", "20", "w2", 1330, "committed"),
      fired("al2", "20", "w2", 1330, "committed"),
    ],
  };
}

function kindsOf(history: AlarmHistory): ViolationKind[] {
  const log = new ViolationLog();
  checkAlarms(history, log);
  return log.kept.map((v) => v.kind);
}

describe("checkAlarms", () => {
  it("passes a clean history, through checkHistory too", () => {
    expect(kindsOf(clean())).toEqual([]);
    expect(checkHistory({ ...cleanHistory(), alarms: clean() }).valid).toBe(true);
  });

  it("reports an acknowledged alarm that never fired", () => {
    const h = clean();
    h.fired = h.fired.filter((f) => f.alarm !== "al2");
    const log = new ViolationLog();
    checkAlarms(h, log);
    expect(log.kept.map((v) => v.kind)).toEqual(["alarm-lost"]);
    expect(log.kept[0]!.detail).toContain("alarm al2, acknowledged by w2 at epoch 20");
    expect(checkHistory({ ...cleanHistory(), alarms: h }).violationCounts).toEqual({ "alarm-lost": 1 });
  });

  it("does not count an alarm whose set was never acknowledged", () => {
    const h = clean();
    expect(h.fired.some((f) => f.alarm === "al3")).toBe(false);
    expect(kindsOf(h)).toEqual([]);
  });

  it("reports an alarm fired again after a firing of it was committed", () => {
    const h = clean();
    h.fired.push(fired("al0", "20", "w2", 400));
    expect(kindsOf(h)).toEqual(["alarm-refired"]);
  });

  it("reports one alarm fired at one epoch by two workers (one of them after a client saw the other)", () => {
    const h = clean();
    h.fired.push(fired("al1", "20", "w3", 1325));
    expect(kindsOf(h)).toEqual(["alarm-split-fire", "alarm-stale-fire"]);
  });

  it("reports one alarm fired at one epoch by two workers before any client saw either", () => {
    const h = clean();
    h.fired.push(fired("al1", "15", "w1", 250), fired("al1", "15", "w3", 260));
    expect(kindsOf(h)).toEqual(["alarm-split-fire"]);
  });

  it("reports an alarm fired at an epoch after a client saw another worker answer at it", () => {
    const h = clean();
    h.fired.push(fired("al4", "20", "w3", 301));
    expect(kindsOf(h)).toEqual(["alarm-stale-fire"]);
  });

  it("reports an alarm the old owner fired after a client saw the new epoch", () => {
    const h = clean();
    h.fired.push(fired("al1", "10", "w1", 301));
    const log = new ViolationLog();
    checkAlarms(h, log);
    expect(log.kept.map((v) => v.kind)).toEqual(["alarm-stale-fire"]);
    expect(log.kept[0]!.detail).toContain("w1 fired alarm al1 at epoch 10 1 ms after a client saw epoch 20");
  });

  it("lets the old owner fire before anyone saw the new epoch", () => {
    const h = clean();
    h.fired.push(fired("al1", "10", "w1", 299));
    expect(kindsOf(h)).toEqual([]);
  });
});
