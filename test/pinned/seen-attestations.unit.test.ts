import { describe, expect, it } from "vitest";
import { SeenAttestations } from "../../src/pinned/seen-attestations.ts";

/**
 * The worker library's memory of accepted attestation ids: each id once, kept until its token's
 * deadline, at most `capacity` ids, and a floor under which nothing is accepted, so forgetting
 * an id (its time passed, or room was needed) never lets its token in again.
 */

const T = 1_800_000_000;
const id = (n: number) => `id-${String(n).padStart(14, "0")}`;

describe("SeenAttestations", () => {
  it("accepts an id once and refuses it again until its deadline, whatever else comes", () => {
    const seen = new SeenAttestations(10);
    expect(seen.admit(id(1), T + 60, T)).toBe(true);
    expect(seen.admit(id(2), T + 60, T)).toBe(true);
    expect(seen.admit(id(1), T + 60, T + 1)).toBe(false);
    expect(seen.admit(id(1), T + 90, T + 59.9)).toBe(false);
    expect(seen.size).toBe(2);
  });

  it("forgets ids whose deadline passed, and refuses any token at or below the clock's second", () => {
    const seen = new SeenAttestations(10);
    expect(seen.admit(id(1), T + 10, T)).toBe(true);
    expect(seen.admit(id(2), T + 20.5, T)).toBe(true);
    expect(seen.admit(id(3), T + 30, T)).toBe(true);
    expect(seen.size).toBe(3);
    // At T + 21 the first two deadlines (T + 10, and T + 20.5 rounded up) have passed.
    expect(seen.admit(id(4), T + 40, T + 21)).toBe(true);
    expect(seen.size).toBe(2);
    expect(seen.admit(id(1), T + 10, T + 21)).toBe(false);
    expect(seen.admit(id(2), T + 20.5, T + 21)).toBe(false);
    expect(seen.admit(id(3), T + 30, T + 21)).toBe(false);
    // A new id whose deadline is this very second is refused too: its token has expired.
    expect(seen.admit(id(5), T + 21, T + 21.5)).toBe(false);
    expect(seen.admit(id(6), T + 21.2, T + 21.5)).toBe(true);
  });

  it("keeps at most `capacity` ids: past it the earliest deadline goes, and the floor refuses its tokens", () => {
    const floors: number[] = [];
    const seen = new SeenAttestations(3, (floor) => floors.push(floor));
    expect(seen.admit(id(1), T + 50, T)).toBe(true);
    expect(seen.admit(id(2), T + 40, T)).toBe(true);
    expect(seen.admit(id(3), T + 60, T)).toBe(true);
    expect(floors).toEqual([]);
    // A fourth: the earliest-expiring id (2, at T + 40) is forgotten and the floor rises to it.
    expect(seen.admit(id(4), T + 45, T)).toBe(true);
    expect(seen.size).toBe(3);
    expect(floors).toEqual([T + 40]);
    // Its replay is refused by the floor, and so is any new token expiring by then.
    expect(seen.admit(id(2), T + 40, T + 1)).toBe(false);
    expect(seen.admit(id(7), T + 39, T + 1)).toBe(false);
    expect(seen.admit(id(8), T + 40, T + 1)).toBe(false);
    // Those still remembered are still refused; a token expiring later is accepted.
    expect(seen.admit(id(1), T + 50, T + 1)).toBe(false);
    expect(seen.admit(id(4), T + 45, T + 1)).toBe(false);
    expect(seen.admit(id(9), T + 41, T + 1)).toBe(true);
    expect(floors).toEqual([T + 40, T + 41]);
    // id 9 was the earliest and was forgotten at once: its replay is refused all the same.
    expect(seen.admit(id(9), T + 41, T + 1)).toBe(false);
    expect(seen.size).toBe(3);
  });

  it("forgets a whole second of ids at once when full, and refuses each of them", () => {
    const seen = new SeenAttestations(100);
    for (let n = 0; n < 100; n++) expect(seen.admit(id(n), T + 30, T)).toBe(true);
    expect(seen.admit(id(100), T + 31, T)).toBe(true);
    expect(seen.size).toBe(1);
    for (let n = 0; n < 100; n++) expect(seen.admit(id(n), T + 30, T)).toBe(false);
    expect(seen.admit(id(100), T + 31, T)).toBe(false);
    expect(seen.admit(id(101), T + 31, T)).toBe(true);
  });

  it("orders deadlines that arrive out of order, and forgets them in deadline order", () => {
    const seen = new SeenAttestations(4);
    for (const [n, deadline] of [
      [1, 35],
      [2, 31],
      [3, 33],
      [4, 32],
    ] as const) {
      expect(seen.admit(id(n), T + deadline, T)).toBe(true);
    }
    expect(seen.admit(id(5), T + 34, T)).toBe(true);
    expect(seen.admit(id(2), T + 31, T)).toBe(false);
    expect(seen.admit(id(6), T + 36, T)).toBe(true);
    // 31 and 32 are gone (floor 32); 33, 34, 35 and 36 remain.
    expect(seen.size).toBe(4);
    expect(seen.admit(id(10), T + 32, T)).toBe(false);
    // One more in the bucket of 33 fills it past capacity again: that whole bucket goes (ids 3, 11).
    expect(seen.admit(id(11), T + 33, T + 32.5)).toBe(true);
    expect(seen.size).toBe(3);
    expect(seen.admit(id(3), T + 33, T + 32.5)).toBe(false);
    expect(seen.admit(id(11), T + 33, T + 32.5)).toBe(false);
    // Time passing to T + 34 forgets 34 (id 5); 35 and 36 remain, and 40 joins them.
    expect(seen.admit(id(12), T + 40, T + 34)).toBe(true);
    expect(seen.size).toBe(3);
    expect(seen.admit(id(1), T + 35, T + 34)).toBe(false);
  });

  it("never lowers its floor when the clock steps back: forgotten ids stay refused", () => {
    const seen = new SeenAttestations(10);
    expect(seen.admit(id(1), T + 30, T)).toBe(true);
    expect(seen.admit(id(2), T + 90, T + 31)).toBe(true);
    expect(seen.size).toBe(1);
    // The clock goes back 20 s: id 1's token would pass the time check again, not this one.
    expect(seen.admit(id(1), T + 30, T + 11)).toBe(false);
    expect(seen.admit(id(3), T + 31.5, T + 11)).toBe(true);
  });

  it("holds its bound over a long run at a steady rate", () => {
    const seen = new SeenAttestations(500);
    let refused = 0;
    for (let n = 0; n < 20_000; n++) {
      const now = T + n / 100;
      if (!seen.admit(id(n), Math.floor(now) + 60, now)) refused++;
      expect(seen.size).toBeLessThanOrEqual(500);
    }
    // 100 a second for 60 s would be 6000: the floor refuses the oldest deadlines, never a fresh
    // token of the current second.
    expect(refused).toBe(0);
  });
});
