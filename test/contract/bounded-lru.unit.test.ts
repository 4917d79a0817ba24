import { describe, expect, it } from "vitest";
import { BoundedLru } from "../../src/contract/bounded-lru.ts";

describe("BoundedLru", () => {
  it("keeps at most its capacity, forgetting the least recently used first", () => {
    const lru = new BoundedLru<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    expect(lru.get("a")).toBe(1); // a is now the most recent
    lru.set("c", 3);
    expect(lru.size).toBe(2);
    expect(lru.get("b")).toBeUndefined();
    expect(lru.get("a")).toBe(1);
    expect(lru.get("c")).toBe(3);
  });

  it("replaces a value without growing, and forgets a deleted key", () => {
    const lru = new BoundedLru<string, number>(2);
    lru.set("a", 1);
    lru.set("b", 2);
    lru.set("a", 10); // a replaced and most recent: b goes first
    lru.set("c", 3);
    expect([lru.get("a"), lru.get("b"), lru.get("c")]).toEqual([10, undefined, 3]);
    lru.delete("a");
    expect(lru.get("a")).toBeUndefined();
    expect(lru.size).toBe(1);
  });
});
