import type { RegistrationHooks } from "../../src/pinned/registration.ts";

/** Registration hooks that do nothing (one free slot of headroom, nothing resident), for unit tests of the loop. */
export function silentRegistrationHooks(overrides: Partial<RegistrationHooks> = {}): RegistrationHooks {
  return {
    headroom: () => 1,
    ownDraining: () => false,
    instances: () => ({}),
    duplicates: () => {},
    message: () => {},
    drain: () => {},
    drainDeadlinePassed: () => {},
    lapsedLeaseRenewed: () => {},
    ...overrides,
  };
}
