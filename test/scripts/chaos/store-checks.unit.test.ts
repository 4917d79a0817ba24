import { describe, expect, it } from "vitest";
import { checkHistory, type ViolationKind } from "../../../scripts/chaos/checker.ts";
import type { History, StoredState } from "../../../scripts/chaos/history.ts";
import { append, history, incr, read, served, userDbWrite } from "./histories.ts";

/**
 * The checks that trust no worker's log (the stores read back from Redis), the served log's
 * completeness, and the user database's fence refusing only what it must: each with a history
 * holding one anomaly, and the same history without it clean.
 */

const kinds = (h: History): ViolationKind[] => checkHistory(h).violations.map((v) => v.kind);

function stored(parts: Partial<StoredState>): StoredState {
  return { userDb: {}, lists: {}, counters: {}, ...parts };
}

describe("the stores read back from Redis", () => {
  const ops = [
    append("v1", { id: 1, start: 0, end: 10, key: "/lists/u0" }),
    append("v2", { id: 2, start: 20, end: 30, key: "/lists/u0", outcome: "info" }),
    append("v3", { id: 3, start: 40, end: 50, key: "/lists/u0", outcome: "fail" }),
  ];
  const finalReads = { "/lists/u0": ["v1"] };
  const clean = stored({ lists: { "/lists/u0": ["v1"] }, userDb: { "/lists/u0": ["v1", "v2"] } });

  it("takes an indeterminate append in the user database only, and agrees with the final read", () => {
    expect(kinds(history({ operations: ops, finalReads, stored: clean }))).toEqual([]);
  });

  it("reports an acknowledged append missing from the durability store or the user database", () => {
    const noUser = stored({ ...clean, userDb: { "/lists/u0": ["v2"] } });
    expect(kinds(history({ operations: ops, finalReads, stored: noUser }))).toEqual(["store-lost-append"]);
    const noDurable = stored({ ...clean, lists: {} });
    expect(kinds(history({ operations: ops, finalReads, stored: noDurable }))).toEqual([
      "store-lost-append",
      "store-final-read-mismatch",
    ]);
  });

  it("reports a value twice, one nobody sent, and one whose append was refused", () => {
    const bad = stored({ ...clean, userDb: { "/lists/u0": ["v1", "v1", "v9", "v3"] } });
    const violations = checkHistory(history({ operations: ops, finalReads, stored: bad })).violations;
    expect(violations.map((v) => v.kind)).toEqual([
      "store-duplicated-value",
      "store-phantom-value",
      "store-phantom-value",
    ]);
    expect(violations[2]!.detail).toContain("append op 3 was refused");
  });

  it("reports a durable list that differs from the final read through Pinboard", () => {
    const h = history({ operations: ops, finalReads: { "/lists/u0": ["v1", "v2"] }, stored: clean });
    expect(kinds(h)).toEqual(["store-final-read-mismatch"]);
  });

  it("reports a stored counter outside its increments or below a value it answered", () => {
    const incrs = [
      incr(1, { id: 1, start: 0, end: 10 }),
      incr(undefined, { id: 2, start: 20, end: 30, outcome: "info" }),
    ];
    const at = (n: number) => history({ operations: incrs, stored: stored({ counters: { "/counters/c": n } }) });
    expect(kinds(at(1))).toEqual([]);
    expect(kinds(at(2))).toEqual([]);
    expect(kinds(at(3))).toEqual(["store-counter-out-of-range"]);
    const answered2 = [...incrs, { ...incr(2, { id: 3, start: 40, end: 50 }), kind: "read" as const }];
    const h = history({ operations: answered2, stored: stored({ counters: { "/counters/c": 1 } }) });
    expect(checkHistory(h).violations.map((v) => v.detail)).toEqual([
      "the durability store holds /counters/c = 1, below the 2 read op 3 was answered",
    ]);
  });
});

describe("answers missing from the served log", () => {
  const operations = [append("v1", { id: 1, start: 0, end: 10 }), read(["v1"], { id: 2, start: 20, end: 30 })];
  const finalReads = { "/lists/a": ["v1"] };
  const logged = [served("w1", "1", 8), { ...served("w1", "1", 25), kind: "read" as const }];

  it("finds each ok answer's line logged before the answer ended", () => {
    expect(kinds(history({ operations, finalReads, served: logged, answersLogged: true }))).toEqual([]);
  });

  it("reports an ok answer its worker never logged, or logged only after the client had it", () => {
    const lost = history({ operations, finalReads, served: logged.slice(1), answersLogged: true });
    expect(checkHistory(lost).violations.map((v) => [v.kind, v.operations])).toEqual([["unlogged-answer", [1]]]);
    const late = history({ operations, finalReads, served: [served("w1", "1", 11), logged[1]!], answersLogged: true });
    expect(kinds(late)).toEqual(["unlogged-answer"]);
  });

  it("needs a line per answer, not one per group", () => {
    const twice = [...operations, read(["v1"], { id: 3, start: 26, end: 35 })];
    expect(kinds(history({ operations: twice, finalReads, served: logged, answersLogged: true }))).toEqual([
      "unlogged-answer",
    ]);
  });
});

describe("the user database's fence refusing", () => {
  it("allows a refusal after a write at a higher epoch was sent", () => {
    const writes = [{ ...userDbWrite("w2", "002", 20, true), start: 15 }, userDbWrite("w1", "01", 18, false)];
    expect(kinds(history({ userDb: writes }))).toEqual([]);
  });

  it("counts a write of unknown outcome as one that may have raised the fence", () => {
    const writes = [
      { ...userDbWrite("w2", "3", 20, false), start: 15, error: "closed" },
      userDbWrite("w1", "2", 30, false),
    ];
    expect(kinds(history({ userDb: writes }))).toEqual([]);
  });

  it("reports a refusal of an epoch no higher one superseded: equal, lower, or only sent later", () => {
    const equal = [
      userDbWrite("w1", "01", 10, true),
      userDbWrite("w1", "01", 20, false),
      userDbWrite("w1", "01", 30, false),
    ];
    const [once] = checkHistory(history({ userDb: equal })).violations;
    expect(once?.detail).toBe(
      "the user database refused worker w1's write of /lists/a at epoch 01 at 20 (2 writes), but no write at a higher epoch was sent before it",
    );
    // A fence comparing "07" with the stored "006" as strings (longer is larger) refuses epoch 7.
    const padded = [userDbWrite("w2", "006", 10, true), userDbWrite("w1", "07", 20, false)];
    expect(checkHistory(history({ userDb: padded })).violations[0]!.detail).toContain("at epoch 07 at 20");
    const sentAfter = [{ ...userDbWrite("w2", "5", 40, true), start: 25 }, userDbWrite("w1", "4", 20, false)];
    expect(kinds(history({ userDb: sentAfter }))).toEqual(["spurious-fence-refusal"]);
  });
});

describe("two workers writing at one epoch", () => {
  it("reports two workers' served writes at one epoch, apart from sharing it only by reading", () => {
    const writes = [served("w1", "4", 10), served("w2", "4", 20)];
    expect(kinds(history({ served: writes }))).toEqual(["shared-epoch-write"]);
    const oneWriter = [served("w1", "4", 10), { ...served("w2", "4", 20), kind: "read" as const }];
    expect(kinds(history({ served: oneWriter }))).toEqual(["split-brain"]);
  });

  it("reports two workers' user-database writes taken at one epoch, compared as numbers", () => {
    const writes = [userDbWrite("w1", "04", 10, true), userDbWrite("w2", "004", 20, true)];
    const [v] = checkHistory(history({ userDb: writes })).violations;
    expect(v?.kind).toBe("shared-epoch-write");
    expect(v?.workers).toEqual(["w1", "w2"]);
    const apart = [userDbWrite("w1", "04", 10, true), userDbWrite("w2", "005", 20, true)];
    expect(kinds(history({ userDb: apart }))).toEqual([]);
  });
});

describe("a zombie's read", () => {
  it("reports a read begun after another worker served a higher epoch apart from a write doing so", () => {
    const zombieRead = [served("w2", "5", 20), { ...served("w1", "4", 30), kind: "read" as const }];
    expect(kinds(history({ served: zombieRead }))).toEqual(["zombie-read"]);
    const zombieWrite = [served("w2", "5", 20), served("w1", "4", 30)];
    expect(kinds(history({ served: zombieWrite }))).toEqual(["split-brain"]);
  });
});

describe("a key never served at the end", () => {
  it("is reported once, by the list check when it has acknowledged appends", () => {
    const unserved = history({ operations: [incr(1, { id: 1, start: 0, end: 10 })], unserved: ["/counters/c"] });
    expect(checkHistory(unserved).violations.map((v) => v.detail)).toEqual([
      "the final read of /counters/c was never served",
    ]);
    const list = history({ operations: [append("v1", { id: 1, start: 0, end: 10 })], unserved: ["/lists/a"] });
    expect(kinds(list)).toEqual(["missing-final-read"]);
  });
});
