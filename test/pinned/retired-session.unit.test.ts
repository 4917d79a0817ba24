import { describe, expect, it } from "vitest";
import { ChallengeState } from "../../src/pinned/challenge.ts";
import { PinboardClient } from "../../src/pinned/pinboard-client.ts";
import { Registration } from "../../src/pinned/registration.ts";
import { silentRegistrationHooks } from "../support/registration-hooks.ts";

/**
 * The retired-session grace on a clock the test holds: the session a worker gave up is still an
 * accepted audience for 5 seconds (docs/worker-library.md, "The previous sessionId, for 5
 * seconds"), and not after. The times are literals from that sentence, not the constant, so a
 * grace of any other length fails here. The end-to-end form is pinboard-attestation.test.ts.
 */

const T0 = 1_800_000_000_000;

/** A registration holding session `s-old` on the clock `clock.ms`; it never calls Pinboard. */
function registrationOn(clock: { ms: number }): Registration {
  const offline = (() => Promise.reject(new Error("no Pinboard in a unit test"))) as typeof fetch;
  const client = new PinboardClient({ pinboardUrl: "http://pinboard.invalid", credential: "t", fetch: offline });
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  const hooks = silentRegistrationHooks();
  const fields = { clientId: "c-unit", secret: "s", namespaces: ["/n"], advertiseUrl: () => "http://w.invalid" };
  const registration = new Registration(client, new ChallengeState(), fields, hooks, {
    log: quiet,
    now: () => clock.ms,
  });
  registration.sessionId = "s-old";
  return registration;
}

describe("the retired session's grace", () => {
  it("accepts the previous session 4.9 s after it was given up and refuses it at 5 s and 5.1 s", () => {
    const clock = { ms: T0 };
    const registration = registrationOn(clock);
    expect(registration.retiredSessionId()).toBeNull();
    registration.abandon();
    const at = (ms: number) => {
      clock.ms = T0 + ms;
      return { ms, retired: registration.retiredSessionId() };
    };
    expect(at(0)).toEqual({ ms: 0, retired: "s-old" });
    expect(at(4_900)).toEqual({ ms: 4_900, retired: "s-old" });
    expect(at(4_999)).toEqual({ ms: 4_999, retired: "s-old" });
    expect(at(5_000)).toEqual({ ms: 5_000, retired: null });
    expect(at(5_100)).toEqual({ ms: 5_100, retired: null });
  });
});
