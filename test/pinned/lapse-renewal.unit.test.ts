import { afterEach, describe, expect, it } from "vitest";
import { ChallengeState } from "../../src/pinned/challenge.ts";
import { PinboardClient } from "../../src/pinned/pinboard-client.ts";
import { Registration } from "../../src/pinned/registration.ts";
import { silentRegistrationHooks } from "../support/registration-hooks.ts";

/**
 * A heartbeat that renews the lease after the worker's own view of it had lapsed: Pinboard may
 * have placed any instance elsewhere meanwhile, so the registration tells the worker to retire
 * every activation (lapsedLeaseRenewed). One in time does not; nor does a register, whose answer
 * names the instances placed elsewhere itself (duplicates). A 3 s lease: the view ends 2,850 ms
 * after the heartbeat was sent (5 % margin), numbers written out.
 */

const T0 = 1_800_000_000_000;
let registration: Registration | undefined;
afterEach(async () => {
  await registration?.stop().catch(() => {});
});

function started(clock: { ms: number }) {
  const calls: string[] = [];
  let lapsedRenewals = 0;
  const pinboard = (async (input: RequestInfo | URL) => {
    const path = new URL(String(input)).pathname;
    calls.push(path);
    const body = path.endsWith("/register") ? { sessionId: "s-1", expiresInMs: 3000 } : { expiresInMs: 3000 };
    return Response.json(body);
  }) as typeof fetch;
  const client = new PinboardClient({ pinboardUrl: "http://pinboard.invalid", credential: "t", fetch: pinboard });
  const hooks = silentRegistrationHooks({
    lapsedLeaseRenewed: () => {
      lapsedRenewals++;
    },
  });
  const quiet = { info: () => {}, warn: () => {}, error: () => {} };
  const fields = {
    clientId: "c-unit",
    secret: "s".repeat(32),
    namespaces: ["/n"],
    advertiseUrl: () => "http://w.invalid",
  };
  registration = new Registration(client, new ChallengeState(), fields, hooks, { log: quiet, now: () => clock.ms });
  return { registration, calls, lapsed: () => lapsedRenewals };
}

describe("a heartbeat that renews a lapsed lease", () => {
  it("retires every activation when the lease view had run out, not when it had not", async () => {
    const clock = { ms: T0 };
    const { registration, calls, lapsed } = started(clock);
    await registration.start();
    expect(calls).toEqual(["/registry/register"]);
    expect(lapsed()).toBe(0); // a register never does

    clock.ms = T0 + 2_849; // 1 ms before the view ends
    await registration.heartbeatNow();
    expect(calls.at(-1)).toBe("/registry/heartbeat");
    expect(lapsed()).toBe(0);

    clock.ms += 2_850; // exactly at the end of the view the last heartbeat granted
    await registration.heartbeatNow();
    expect(lapsed()).toBe(1);

    clock.ms += 1_000; // renewed in time again
    await registration.heartbeatNow();
    expect(lapsed()).toBe(1);
  });
});
