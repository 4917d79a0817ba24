import { describe, expect, it } from "vitest";
import type { RefusalOutcome } from "../../src/contract/refusal-outcomes.ts";
import { PinboardError } from "../../src/errors/pinboard-error.ts";
import { REFUSAL_ERRORS, Refusal } from "../../src/placement/refusal.ts";

/**
 * The refusals of a resolution (docs/protocol.md, Refusals): 404 `unknown namespace`, and for every
 * other outcome 503 with its own error string and `Retry-After: max(1, ceil(remaining / 1000))`.
 */

/** [outcome, status, error] of every 503 refusal, as docs/protocol.md states them. */
const REFUSALS_503: readonly (readonly [Exclude<RefusalOutcome, "unknown-ns">, 503, string])[] = [
  ["no-backends", 503, "no live backends for namespace"],
  ["quarantine", 503, "registry cold start, retry"],
  ["not-serving", 503, "not the serving fleet"],
  ["no-hostname-workers", 503, "no live workers for hostname"],
  ["binding-quarantine", 503, "hostname binding displaced, retry"],
  ["env-conflict", 503, "hostname bindings inconsistent, retry"],
  ["takeover-pending", 503, "takeover in progress, retry"],
  ["takeover-denied", 503, "placement held by another hostname"],
  ["inflight", 503, "worker inflight cap exceeded, retry"],
  ["nack", 503, "worker refused activation, retry"],
];

describe("REFUSAL_ERRORS", () => {
  it("holds the protocol's 503 error string of each refusal", () => {
    expect(REFUSAL_ERRORS).toEqual(Object.fromEntries(REFUSALS_503.map(([outcome, , error]) => [outcome, error])));
  });
});

describe("Refusal", () => {
  it("unknown-ns is 404 unknown namespace, without Retry-After", () => {
    const refusal = new Refusal("unknown-ns", 5000);
    expect(refusal).toBeInstanceOf(PinboardError);
    expect({ outcome: refusal.outcome, status: refusal.status, body: refusal.body, headers: refusal.headers }).toEqual({
      outcome: "unknown-ns",
      status: 404,
      body: { error: "unknown namespace" },
      headers: {},
    });
  });

  it.each(REFUSALS_503)("%s is %i %s with Retry-After: 1 by default", (outcome, status, error) => {
    const refusal = new Refusal(outcome);
    expect({
      outcome: refusal.outcome,
      status: refusal.status,
      body: refusal.body,
      headers: refusal.headers,
    }).toEqual({ outcome, status, body: { error }, headers: { "Retry-After": "1" } });
  });

  it("rounds the remaining window up to whole seconds, at least 1", () => {
    const retryAfter = (remainingMs: number) => new Refusal("quarantine", remainingMs).headers["Retry-After"];
    expect(retryAfter(0)).toBe("1");
    expect(retryAfter(-2500)).toBe("1");
    expect(retryAfter(1)).toBe("1");
    expect(retryAfter(1000)).toBe("1");
    expect(retryAfter(1001)).toBe("2");
    expect(retryAfter(14_999)).toBe("15");
    expect(retryAfter(15_000)).toBe("15");
  });
});
