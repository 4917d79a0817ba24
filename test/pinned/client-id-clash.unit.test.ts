import { describe, expect, it } from "vitest";
import { ClientIdClash, clientIdHeldMessage } from "../../src/pinned/client-id-clash.ts";

/**
 * The worker's own reading of a lost session (ClientIdClash): a loss after the lease ran out is
 * expiry, one loss while it held is a one-off, and repeated losses while it held are another
 * process with the same clientId, answered with a doubling backoff capped at four leases.
 */
describe("ClientIdClash", () => {
  const message =
    'clientId "w-1" is held by another live process (its registration replaced this one): ' +
    "give each process its own clientId (the clientId option or CLIENT_ID)";

  it("names the clientId JSON-quoted and says how to fix it", () => {
    expect(clientIdHeldMessage("w-1")).toBe(message);
    expect(clientIdHeldMessage('a"b')).toContain('clientId "a\\"b" is held');
  });

  it("re-registers at once after a loss while the lease had run out, and that loss resets the streak", () => {
    const clash = new ClientIdClash("w-1");
    expect(clash.lost(false, 1000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(false, 1000, 15_000)).toEqual({ delayMs: 0 });
    // The streak started again: this is again a first loss while held.
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 0 });
  });

  it("backs off from the second loss while held: one interval, doubling, at most four leases", () => {
    const clash = new ClientIdClash("w-1");
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 1000, message });
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 2000, message });
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 4000, message });
    expect(clash.lost(true, 1000, 15_000).delayMs).toBe(8000);
    expect(clash.lost(true, 1000, 15_000).delayMs).toBe(16_000);
    expect(clash.lost(true, 1000, 15_000).delayMs).toBe(32_000);
    expect(clash.lost(true, 1000, 15_000).delayMs).toBe(60_000);
    expect(clash.lost(true, 1000, 15_000).delayMs).toBe(60_000);
  });

  it("keeps the exponent bounded after very many losses, so the cap still applies", () => {
    const clash = new ClientIdClash("w-1");
    for (let i = 0; i < 2000; i++) clash.lost(true, 1, 1e300);
    // 2^(streak − 2) would be Infinity past 1024 losses; the exponent stops at 20.
    expect(clash.lost(true, 1, 1e300).delayMs).toBe(2 ** 20);
  });

  it("a heartbeat that succeeded settles the streak", () => {
    const clash = new ClientIdClash("w-1");
    clash.lost(true, 1000, 15_000);
    clash.lost(true, 1000, 15_000);
    clash.renewed();
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(true, 1000, 15_000)).toEqual({ delayMs: 1000, message });
  });
});
