import { afterEach, describe, expect, it } from "vitest";
import { ChallengeState } from "../../src/pinned/challenge.ts";
import { PinboardClient } from "../../src/pinned/pinboard-client.ts";
import { drainEndsAt, Registration } from "../../src/pinned/registration.ts";
import { silentRegistrationHooks } from "../support/registration-hooks.ts";

/**
 * A timed drain ends, by the worker's clock, no later than Pinboard's deadline can be: Pinboard
 * sends the seconds left rounded up (drainDeadline), counted from its own now, never before the
 * heartbeat was sent. So the worker counts from the sending, less 1 s for the rounding and 5 %
 * for clock rates (as its lease view does). Numbers written out.
 */

const T0 = 1_800_000_000_000;
let registration: Registration | undefined;
afterEach(async () => {
  await registration?.stop().catch(() => {});
});

describe("drainEndsAt", () => {
  it("is the heartbeat's sending + the seconds, less 1 s and 5 %", () => {
    expect(drainEndsAt(T0, 10)).toBe(T0 + 8_500);
    expect(drainEndsAt(T0, 60)).toBe(T0 + 56_000);
    expect(drainEndsAt(T0, 0)).toBe(T0 - 1_000);
  });
});

describe("a heartbeat answer that carries a timed drain", () => {
  it("ends the drain counted from the heartbeat's sending, not the answer's arrival", async () => {
    const clock = { ms: T0 };
    const drains: Array<[boolean, number | undefined]> = [];
    const pinboard = (async (input: RequestInfo | URL) => {
      const path = new URL(String(input)).pathname;
      if (path.endsWith("/register")) return Response.json({ sessionId: "s-1", expiresInMs: 15_000 });
      clock.ms += 700; // the answer takes 700 ms to come back
      return Response.json({ expiresInMs: 15_000, draining: true, drainDeadline: 10 });
    }) as typeof fetch;
    const client = new PinboardClient({ pinboardUrl: "http://pinboard.invalid", credential: "t", fetch: pinboard });
    const hooks = silentRegistrationHooks({ drain: (draining, endsAt) => drains.push([draining, endsAt]) });
    const quiet = { info: () => {}, warn: () => {}, error: () => {} };
    const fields = {
      clientId: "c-drain",
      secret: "s".repeat(32),
      namespaces: ["/n"],
      advertiseUrl: () => "http://w.invalid",
    };
    registration = new Registration(client, new ChallengeState(), fields, hooks, { log: quiet, now: () => clock.ms });
    await registration.start();
    const sentAt = clock.ms;
    await registration.heartbeatNow();
    expect(clock.ms).toBe(sentAt + 700);
    expect(drains.at(-1)).toEqual([true, sentAt + 8_500]);
  });
});
