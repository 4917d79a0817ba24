import { describe, expect, it } from "vitest";
import { checkHistory, type Verdict, type Violation, type ViolationKind } from "../../../scripts/chaos/checker.ts";
import type { History } from "../../../scripts/chaos/history.ts";
import { MAX_VIOLATIONS_PER_KIND } from "../../../scripts/chaos/verdict.ts";
import { append, cleanHistory, history, incr, killWorker, read, served, userDbWrite } from "./histories.ts";

/**
 * Each check of the chaos checker, proved able to fail: a history with exactly one anomaly trips
 * exactly that check, and the violation's detail names the operations, workers and epochs involved.
 */

function violationsOf(h: History, kind: ViolationKind): Violation[] {
  const verdict: Verdict = checkHistory(h);
  expect(verdict.violations.map((v) => v.kind)).toEqual(verdict.violations.map(() => kind));
  expect(verdict.valid).toBe(false);
  return verdict.violations;
}

function theViolation(h: History, kind: ViolationKind): Violation {
  const violations = violationsOf(h, kind);
  expect(violations).toHaveLength(1);
  return violations[0]!;
}

/** The clean history with some operations replaced (same id) or added. */
function cleanWith(changes: Partial<History>): History {
  return { ...cleanHistory(), ...changes };
}

describe("a clean history", () => {
  it("has no violation and meets the SLO", () => {
    const verdict = checkHistory(cleanHistory());
    expect(verdict.violations).toEqual([]);
    expect(verdict.violationCounts).toEqual({});
    expect(verdict.valid).toBe(true);
    expect(verdict.sloMet).toBe(true);
    expect(verdict.stats.userDb).toEqual({ accepted: 2, refused: 1 });
  });
});

describe("appends", () => {
  const base = () => ({
    operations: [append("v1", { id: 1, start: 0, end: 10 }), append("v2", { id: 2, start: 5, end: 15 })],
  });

  it("reports an acknowledged append missing from the final read as lost", () => {
    const v = theViolation(history({ ...base(), finalReads: { "/lists/a": ["v1"] } }), "lost-append");
    expect(v).toMatchObject({ key: "/lists/a", operations: [2] });
    expect(v.detail).toContain("append op 2");
    expect(v.detail).toContain("v2");
  });

  it("reports a value twice in the final read as duplicated, naming its append", () => {
    const v = theViolation(history({ ...base(), finalReads: { "/lists/a": ["v1", "v2", "v1"] } }), "duplicated-append");
    expect(v.detail).toContain("append op 1");
    expect(v.detail).toContain("positions 0 and 2");
  });

  it("lets an indeterminate append appear once or not at all, never twice", () => {
    const ops = [append("v1", { id: 1, start: 0, end: 10, outcome: "info" })];
    expect(checkHistory(history({ operations: ops, finalReads: { "/lists/a": [] } })).valid).toBe(true);
    expect(checkHistory(history({ operations: ops, finalReads: { "/lists/a": ["v1"] } })).valid).toBe(true);
    theViolation(history({ operations: ops, finalReads: { "/lists/a": ["v1", "v1"] } }), "duplicated-append");
  });

  it("reports a refused append that took effect", () => {
    const ops = [...base().operations, append("v3", { id: 3, start: 20, end: 30, outcome: "fail" })];
    const v = theViolation(
      history({ operations: ops, finalReads: { "/lists/a": ["v1", "v2", "v3"] } }),
      "failed-append-visible",
    );
    expect(v.detail).toContain("append op 3");
    expect(v.operations).toEqual([3]);
  });

  it("reports a value nobody appended", () => {
    const v = theViolation(history({ ...base(), finalReads: { "/lists/a": ["v1", "v2", "ghost"] } }), "phantom-value");
    expect(v.detail).toContain("ghost");
  });

  it("reports a key with acknowledged appends but no final read", () => {
    const v = theViolation(history({ ...base(), finalReads: {} }), "missing-final-read");
    expect(v.key).toBe("/lists/a");
  });

  it("keeps the first violations of a kind and counts them all", () => {
    const operations = Array.from({ length: MAX_VIOLATIONS_PER_KIND + 50 }, (_, i) =>
      append(`v${i}`, { id: i, start: i, end: i + 1 }),
    );
    const verdict = checkHistory(history({ operations, finalReads: { "/lists/a": [] } }));
    expect(verdict.violations).toHaveLength(MAX_VIOLATIONS_PER_KIND);
    expect(verdict.violationCounts).toEqual({ "lost-append": MAX_VIOLATIONS_PER_KIND + 50 });
  });
});

describe("reads", () => {
  const appends = [append("v1", { id: 1, start: 0, end: 10 }), append("v2", { id: 2, start: 20, end: 30 })];
  const finalReads = { "/lists/a": ["v1", "v2"] };

  it("reports a read that is not a prefix of the final read", () => {
    const operations = [...appends, read(["v2"], { id: 3, start: 5, end: 50 })];
    const v = theViolation(history({ operations, finalReads }), "non-prefix-read");
    expect(v.detail).toContain("read op 3");
    expect(v.detail).toContain("has v2 at position 0 where the final read has v1");
  });

  it("reports a value twice in a read, and a refused append a read saw", () => {
    const failed = append("v3", { id: 3, start: 0, end: 10, outcome: "fail" });
    const operations = [...appends, failed, read(["v1", "v1", "v3"], { id: 4, start: 11, end: 15 })];
    const kinds = checkHistory(history({ operations, finalReads })).violations.map((v) => [v.kind, v.operations]);
    expect(kinds).toEqual([
      ["non-prefix-read", [4]],
      ["duplicated-append", [4]],
      ["failed-append-visible", [3, 4]],
    ]);
  });

  it("reports a read missing an append acknowledged before it started as stale", () => {
    const operations = [...appends, read(["v1"], { id: 3, start: 31, end: 40, worker: "w9", epoch: "7" })];
    const v = theViolation(history({ operations, finalReads }), "stale-read");
    expect(v.operations).toEqual([3, 2]);
    expect(v.detail).toContain("read op 3");
    expect(v.detail).toContain("append op 2");
    expect(v.detail).toContain("worker w9, epoch 7");
  });

  it("does not call a read stale for an append still in flight when it started", () => {
    const operations = [...appends, read(["v1"], { id: 3, start: 30, end: 40 })];
    expect(checkHistory(history({ operations, finalReads })).violations).toEqual([]);
  });

  it("reports a stale read that is also off the order", () => {
    const operations = [...appends, read(["v9"], { id: 3, start: 31, end: 40 })];
    const v = checkHistory(history({ operations, finalReads })).violations.find((x) => x.kind === "stale-read");
    expect(v?.detail).toContain("append op 1");
  });
});

describe("epochs a client sees", () => {
  it("reports an epoch lower than one an earlier operation on the key saw", () => {
    const operations = [
      append("v1", { id: 1, start: 0, end: 10, epoch: "9007199254740993", worker: "w2" }),
      read(["v1"], { id: 2, start: 11, end: 20, epoch: "9007199254740992", worker: "w1" }),
    ];
    const v = theViolation(history({ operations, finalReads: { "/lists/a": ["v1"] } }), "epoch-regression");
    expect(v.operations).toEqual([1, 2]);
    expect(v.detail).toMatch(
      /op 2 .* epoch 9007199254740992 from worker w1 after op 1 .* epoch 9007199254740993 from worker w2/,
    );
  });

  it("allows a lower epoch on an overlapping operation", () => {
    const operations = [
      append("v1", { id: 1, start: 0, end: 10, epoch: "3" }),
      read(["v1"], { id: 2, start: 9, end: 20, epoch: "2" }),
    ];
    expect(checkHistory(history({ operations, finalReads: { "/lists/a": ["v1"] } })).violations).toEqual([]);
  });
});

describe("activations in the workers' logs", () => {
  it("reports two workers serving a key at one epoch", () => {
    const reads = [served("w1", "4", 10), served("w2", "4", 20)].map((e) => ({ ...e, kind: "read" as const }));
    const v = theViolation(history({ served: reads }), "split-brain");
    expect(v.detail).toContain("w1");
    expect(v.detail).toContain("w2");
    expect(v.detail).toContain("epoch 4");
    expect(v.workers).toEqual(["w1", "w2"]);
  });

  it("reports a zombie serving after another worker served a higher epoch, once per pair", () => {
    const log = [served("w1", "4", 10), served("w2", "5", 20), served("w1", "4", 30), served("w1", "4", 35)];
    const v = theViolation(history({ served: log }), "split-brain");
    expect(v.detail).toBe(
      "worker w1 served /lists/a at epoch 4 at 30 (2 times, until 35) after worker w2 had served epoch 5 at 20",
    );
    expect(v.epochs).toEqual(["5", "4"]);
  });

  it("compares against the highest epoch of another worker, not the zombie's own later one", () => {
    const ownOnly = [served("w1", "5", 10), served("w1", "7", 20), served("w1", "5", 30)];
    expect(checkHistory(history({ served: ownOnly })).violations).toEqual([]);
    const log = [served("w1", "5", 10), served("w2", "6", 20), served("w1", "7", 25), served("w1", "5", 30)];
    expect(theViolation(history({ served: log }), "split-brain").detail).toContain(
      "after worker w2 had served epoch 6",
    );
  });

  it("judges a served request by when its handling began: one begun before the newer epoch's first answer may finish after it", () => {
    const begunBefore = [served("w2", "5", 20), { ...served("w1", "4", 27), start: 19 }];
    expect(checkHistory(history({ served: begunBefore })).violations).toEqual([]);
    const begunAfter = [served("w2", "5", 20), { ...served("w1", "4", 27), start: 21 }];
    expect(theViolation(history({ served: begunAfter }), "split-brain").detail).toBe(
      "worker w1 served /lists/a at epoch 4 at 27 after worker w2 had served epoch 5 at 20",
    );
  });

  it("does not compare entries logged at the same instant", () => {
    expect(checkHistory(history({ served: [served("w2", "5", 20), served("w1", "4", 20)] })).violations).toEqual([]);
  });
});

describe("the user database", () => {
  it("reports a write taken at a lower epoch after a higher one", () => {
    const writes = [
      userDbWrite("w1", "1", 10, true),
      userDbWrite("w2", "2", 20, true),
      userDbWrite("w1", "1", 30, true),
    ];
    const v = theViolation(history({ userDb: writes }), "user-db-stale-write");
    expect(v.detail).toContain("worker w1's write of /lists/a at epoch 1 at 30");
    expect(v.detail).toContain("worker w2's at epoch 2");
  });

  it("judges a write by when it was sent: one sent before the higher was taken may have run first", () => {
    // w1's write at epoch 1 was sent at 15, before w2's at epoch 2 was taken (20), and logged at 21.
    const raced = [userDbWrite("w2", "2", 20, true), { ...userDbWrite("w1", "1", 21, true), start: 15 }];
    expect(checkHistory(history({ userDb: raced })).violations).toEqual([]);
    // Sent at 25, after the higher one was taken: the fence should have refused it.
    const stale = [userDbWrite("w2", "2", 20, true), { ...userDbWrite("w1", "1", 30, true), start: 25 }];
    expect(theViolation(history({ userDb: stale }), "user-db-stale-write").detail).toContain("at epoch 1 at 30");
  });

  it("counts the fence's refusals without calling them violations", () => {
    const writes = [userDbWrite("w2", "2", 20, true), userDbWrite("w1", "1", 30, false)];
    const verdict = checkHistory(history({ userDb: writes }));
    expect(verdict.violations).toEqual([]);
    expect(verdict.stats.userDb).toEqual({ accepted: 1, refused: 1 });
  });
});

describe("counters", () => {
  it("reports an increment answering less than one acknowledged before it", () => {
    const operations = [
      incr(1, { id: 1, start: 0, end: 10 }),
      incr(3, { id: 2, start: 11, end: 20 }),
      incr(2, { id: 3, start: 21, end: 30 }),
    ];
    const v = theViolation(history({ operations }), "counter-regression");
    expect(v.operations).toEqual([2, 3]);
    expect(v.detail).toMatch(/incr op 3 .* answered 2 after incr op 2 .* answered 3/);
  });

  it("reports a read of the counter lower than an acknowledged increment", () => {
    const operations = [
      incr(1, { id: 1, start: 0, end: 10 }),
      incr(2, { id: 2, start: 11, end: 20 }),
      { ...incr(1, { id: 3, start: 21, end: 30 }), kind: "read" as const },
    ];
    const v = theViolation(history({ operations }), "counter-regression");
    expect(v.operations).toEqual([2, 3]);
  });

  it("reports two increments answering one value, even concurrent ones", () => {
    const operations = [
      incr(1, { id: 1, start: 0, end: 10, worker: "w1" }),
      incr(1, { id: 2, start: 5, end: 15, worker: "w2" }),
      incr(3, { id: 3, start: 5, end: 15 }),
    ];
    const v = theViolation(history({ operations }), "duplicate-counter-answer");
    expect(v.detail).toContain("incr ops 1, 2");
    expect(v.detail).toContain("workers w1, w2");
  });

  it("reports a final counter below the acknowledged increments as lost", () => {
    const operations = [
      incr(1, { id: 1, start: 0, end: 10 }),
      incr(2, { id: 2, start: 0, end: 10 }),
      incr(undefined, { id: 3, start: 0, end: 10 }),
    ];
    const v = theViolation(history({ operations }), "lost-increment");
    expect(v.detail).toContain("ends at 2 (incr op 2) after 3 acknowledged and 0 indeterminate incrs");
  });

  it("reports a final counter above acknowledged plus indeterminate increments as duplicated", () => {
    const operations = [
      incr(1, { id: 1, start: 0, end: 10 }),
      incr(undefined, { id: 2, start: 11, end: 20, outcome: "info" }),
      incr(undefined, { id: 3, start: 11, end: 20, outcome: "fail" }),
      { ...incr(4, { id: 4, start: 30, end: 40 }), kind: "read" as const },
    ];
    const v = theViolation(history({ operations }), "duplicated-increment");
    expect(v.detail).toContain("ends at 4 (read op 4) after only 1 acknowledged and 1 indeterminate incrs");
  });
});

describe("recovery", () => {
  it("reports a killed owner's key never served again", () => {
    const h = cleanWith({ faults: [killWorker("w1", 2000, ["/lists/a"])] });
    const v = theViolation(h, "never-recovered");
    expect(v.detail).toContain("kill-worker of w1 at 2000");
    expect(v.workers).toEqual(["w1"]);
  });
});
