import { describe, expect, it } from "vitest";
import { isAlive } from "../../../../src/runtime/node/dev-store/dev-store.ts";

/**
 * The dev store's owner check: process.kill(pid, 0) throwing EPERM means the process exists but
 * is another user's, so the store stays refused; only ESRCH (no such process) frees it. The
 * tests run as root here, where no real pid answers EPERM, so the signal is injected.
 */

const failing = (code: string) => () => {
  throw Object.assign(new Error(`kill: ${code}`), { code });
};

describe("a dev store owner's liveness", () => {
  it("is alive when signal 0 reaches it or answers EPERM, dead only on ESRCH", () => {
    expect(isAlive(4242, () => true)).toBe(true);
    expect(isAlive(4242, failing("EPERM"))).toBe(true);
    expect(isAlive(4242, failing("ESRCH"))).toBe(false);
  });

  it("signals the pid with 0, and finds this very process alive through the real process.kill", () => {
    const asked: [number, number][] = [];
    isAlive(4242, (pid, signal) => asked.push([pid, signal]));
    expect(asked).toEqual([[4242, 0]]);
    expect(isAlive(process.pid)).toBe(true);
  });
});
