import { describe, expect, it } from "vitest";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { SPREAD_CACHE, SpreadCache } from "../../src/operator/spread-cache.ts";

/**
 * The spread's answers kept per claim scope: 10 s, or 20 times what the count took when that
 * is longer; claims that differ only in what does not decide visibility share an answer; at
 * most SPREAD_CACHE.entries scopes, the oldest answer dropped first.
 */

const claim = (namespaces: string[], more: Partial<PinboardClaim> = {}): PinboardClaim => ({
  namespaces,
  allowedBackendHosts: ["*"],
  ...more,
});

function clocked() {
  let now = 1_000_000;
  return {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
}

describe("SpreadCache", () => {
  it("answers a kept answer for 10 s, then counts again", async () => {
    const clock = clocked();
    const cache = new SpreadCache<number>(clock.now);
    let counts = 0;
    const count = async () => ++counts;
    expect(await cache.get(claim(["/a"]), count)).toBe(1);
    clock.advance(SPREAD_CACHE.ttlMs - 1);
    expect(await cache.get(claim(["/a"]), count)).toBe(1);
    clock.advance(1);
    expect(await cache.get(claim(["/a"]), count)).toBe(2);
  });

  it("keeps a costly answer 20 times as long as it took", async () => {
    const clock = clocked();
    const cache = new SpreadCache<number>(clock.now);
    let counts = 0;
    const slow = async () => {
      clock.advance(2000);
      return ++counts;
    };
    expect(await cache.get(claim(["/a"]), slow)).toBe(1);
    clock.advance(2000 * SPREAD_CACHE.costFactor - 1);
    expect(await cache.get(claim(["/a"]), slow)).toBe(1);
    clock.advance(1);
    expect(await cache.get(claim(["/a"]), slow)).toBe(2);
  });

  it("keys answers by namespaces, hostnames and envs, in any order, and nothing else", async () => {
    const cache = new SpreadCache<string>(clocked().now);
    await cache.get(claim(["/a", "/b"]), async () => "ab");
    expect(await cache.get(claim(["/b", "/a"], { allowedBackendHosts: [], allowedPorts: [1] }), async () => "x")).toBe(
      "ab",
    );
    expect(await cache.get(claim(["/a", "/b"], { hostnames: ["h"] }), async () => "h")).toBe("h");
    expect(await cache.get(claim(["/a", "/b"], { envs: ["prod"] }), async () => "e")).toBe("e");
    expect(await cache.get(claim(["/a"]), async () => "a")).toBe("a");
  });

  it("keeps at most SPREAD_CACHE.entries scopes, dropping the oldest", async () => {
    const cache = new SpreadCache<string>(clocked().now);
    for (let i = 0; i <= SPREAD_CACHE.entries; i++) await cache.get(claim([`/n${i}`]), async () => `first ${i}`);
    expect(await cache.get(claim(["/n0"]), async () => "again 0")).toBe("again 0");
    expect(await cache.get(claim([`/n${SPREAD_CACHE.entries}`]), async () => "x")).toBe(
      `first ${SPREAD_CACHE.entries}`,
    );
  });

  it("keeps nothing when the count fails", async () => {
    const cache = new SpreadCache<string>(clocked().now);
    await expect(cache.get(claim(["/a"]), async () => Promise.reject(new Error("redis down")))).rejects.toThrow();
    expect(await cache.get(claim(["/a"]), async () => "counted")).toBe("counted");
  });
});
