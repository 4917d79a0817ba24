import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ClientIdClash } from "../../src/pinned/client-id-clash.ts";
import { compareEpochs } from "../../src/pinned/index.ts";
import { backoffMs, PinboardCallError } from "../../src/pinned/pinboard-client.ts";
import { isFatal } from "../../src/pinned/registration.ts";

describe("jittered backoff", () => {
  it("stays within [½, 1] of the capped exponential", () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 60 }), fc.double({ min: 0, max: 0.999999, noNaN: true }), (attempt, r) => {
        const ceiling = Math.min(5000, 250 * 2 ** Math.min(attempt, 30));
        const delay = backoffMs(attempt, 250, 5000, () => r);
        return delay >= Math.floor(ceiling / 2) && delay <= ceiling;
      }),
    );
  });
});

describe("register failures", () => {
  const err = (status: number | null, error = "") => new PinboardCallError("register", status, { error });

  it("retries what may pass later", () => {
    for (const e of [
      err(null),
      err(500),
      err(502),
      err(503, "not the serving fleet"),
      err(429),
      err(400, "registration probe failed"),
    ]) {
      expect(isFatal(e)).toBe(false);
    }
  });

  it("gives up on what retrying cannot fix", () => {
    for (const e of [
      err(401, "unauthorized"),
      err(403, "namespace not allowed: /x"),
      err(409, "client belongs to another account"),
      err(400, "expected {...}"),
      err(413, "body too large"),
    ]) {
      expect(isFatal(e)).toBe(true);
    }
  });
});

describe("epochs", () => {
  it("compare as integers of any length", () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.bigInt({ min: 0n, max: 10n ** 40n }), (a, b) => {
        const expected = a < b ? -1 : a > b ? 1 : 0;
        return compareEpochs(String(a), `000${b}`) === expected;
      }),
    );
  });
});

describe("sessions lost while the lease held (client-id-clash.ts)", () => {
  const line =
    'clientId "worker-a" is held by another live process (its registration replaced this one): ' +
    "give each process its own clientId (the clientId option or CLIENT_ID)";

  it("the first is re-registered at once; from the second in a row, a heartbeat interval doubling up to four leases", () => {
    const clash = new ClientIdClash("worker-a");
    const delays = Array.from({ length: 8 }, () => clash.lost(true, 5000, 15_000));
    expect(delays.map((d) => d.delayMs)).toEqual([0, 5000, 10_000, 20_000, 40_000, 60_000, 60_000, 60_000]);
    expect(delays[0]!.message).toBeUndefined();
    expect(delays.slice(1).every((d) => d.message === line)).toBe(true);
  });

  it("a heartbeat that succeeds, or a loss after the lease ran out, starts the count again", () => {
    const clash = new ClientIdClash("worker-a");
    clash.lost(true, 5000, 15_000);
    clash.renewed();
    expect(clash.lost(true, 5000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(false, 5000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(true, 5000, 15_000)).toEqual({ delayMs: 0 });
    expect(clash.lost(true, 5000, 15_000)).toEqual({ delayMs: 5000, message: line });
  });
});
