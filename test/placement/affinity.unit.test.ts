import { describe, expect, it } from "vitest";
import { type AffinityRequest, affinityHash, clientAddress, clientIpAffinity } from "../../src/placement/affinity.ts";

/**
 * The affinity key's inputs and its hash. Every node of a fleet, on either entry, must hash a key
 * to the same uint32 (the resolve script mixes it with each session's seed), so the values are
 * fixed: FNV-1a over the UTF-16 code units, then murmur3's finaliser. The expected values were
 * computed by a separate implementation (Python, over the UTF-16LE bytes).
 */

describe("affinityHash", () => {
  it("is FNV-1a over UTF-16 code units with murmur3's finaliser, as a uint32", () => {
    expect(affinityHash("")).toBe(0xab3e7c0b);
    expect(affinityHash("a")).toBe(0x1a80b1b3);
    expect(affinityHash("10.0.0.7")).toBe(0xdd7bf880);
    expect(affinityHash("203.0.113.9")).toBe(0x1f1856e7);
    expect(affinityHash("tenant:acme")).toBe(0xb6786d2f);
    expect(affinityHash("日本")).toBe(0x0e19ba4d);
    // Outside the BMP: two code units, each hashed.
    expect(affinityHash("😀")).toBe(0x6a85a426);
  });

  it("is an unsigned 32-bit integer for any key", () => {
    for (const key of ["", "x", "\uffff".repeat(40), "a".repeat(10_000)]) {
      const h = affinityHash(key);
      expect(Number.isInteger(h) && h >= 0 && h <= 0xffffffff).toBe(true);
    }
  });
});

describe("clientAddress", () => {
  const proxies = ["10.0.0.1", "10.0.0.2"];

  it("is the peer when the peer is not a trusted proxy, whatever X-Forwarded-For says", () => {
    expect(clientAddress("203.0.113.9", "6.6.6.6", proxies)).toBe("203.0.113.9");
    expect(clientAddress("203.0.113.9", "6.6.6.6", [])).toBe("203.0.113.9");
  });

  it("is the peer when a trusted proxy sends no X-Forwarded-For, or an empty one", () => {
    expect(clientAddress("10.0.0.1", null, proxies)).toBe("10.0.0.1");
    expect(clientAddress("10.0.0.1", "", proxies)).toBe("10.0.0.1");
  });

  it("from a trusted proxy: the rightmost entry that is not itself a trusted proxy", () => {
    expect(clientAddress("10.0.0.1", "198.51.100.4", proxies)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.1", "6.6.6.6, 198.51.100.4", proxies)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.1", "6.6.6.6, 198.51.100.4, 10.0.0.2", proxies)).toBe("198.51.100.4");
    expect(clientAddress("10.0.0.1", " 6.6.6.6 ,, 10.0.0.2 ,", proxies)).toBe("6.6.6.6");
  });

  it("from a trusted proxy whose every hop is a trusted proxy: the leftmost hop", () => {
    expect(clientAddress("10.0.0.1", "10.0.0.2, 10.0.0.1", proxies)).toBe("10.0.0.2");
    expect(clientAddress("10.0.0.1", " , ", proxies)).toBe("10.0.0.1");
  });
});

describe("clientIpAffinity", () => {
  const request: AffinityRequest = {
    method: "GET",
    pathname: "/threads/a",
    search: "",
    host: "pinboard.example",
    headers: new Headers(),
  };

  it("keys by the client address, and skips the preference when there is none", () => {
    expect(clientIpAffinity(request, { address: "198.51.100.4", peer: "10.0.0.1" })).toBe("198.51.100.4");
    expect(clientIpAffinity(request, { address: "", peer: "10.0.0.1" })).toBeNull();
  });
});
