import { describe, expect, it } from "vitest";
import { InflightGate } from "../../src/placement/inflight.ts";
import { Refusal } from "../../src/placement/refusal.ts";

describe("InflightGate", () => {
  it("counts forwards per worker, refuses past the cap, and lists only workers with forwards in flight", () => {
    const gate = new InflightGate(2);
    const a1 = gate.acquire("a");
    const a2 = gate.acquire("a");
    const b1 = gate.acquire("b");
    expect(() => gate.acquire("a")).toThrow(Refusal);
    expect(new Map(gate.entries())).toEqual(
      new Map([
        ["a", 2],
        ["b", 1],
      ]),
    );
    a1();
    a1(); // a release counts once
    expect(new Map(gate.entries())).toEqual(
      new Map([
        ["a", 1],
        ["b", 1],
      ]),
    );
    b1();
    a2();
    expect([...gate.entries()]).toEqual([]);
    // An idle worker starts again from nothing.
    const again = [gate.acquire("a"), gate.acquire("a")];
    expect(() => gate.acquire("a")).toThrow(Refusal);
    for (const release of again) release();
    expect([...gate.entries()]).toEqual([]);
  });

  it("forgets idle workers as others come and go, and keeps those still busy", () => {
    const gate = new InflightGate(1);
    const busy = gate.acquire("busy");
    for (let i = 0; i < 5000; i++) gate.acquire(`w-${i}`)();
    expect([...gate.entries()]).toEqual([["busy", 1]]);
    expect(() => gate.acquire("busy")).toThrow(Refusal);
    busy();
    expect([...gate.entries()]).toEqual([]);
    gate.acquire("busy");
    expect([...gate.entries()]).toEqual([["busy", 1]]);
  });
});
