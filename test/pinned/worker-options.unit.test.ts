import { describe, expect, it } from "vitest";
import { consoleLine } from "../../src/pinned/worker-options.ts";

/**
 * The worker library's console line: one line, its fields and error last, and no control code
 * of a client's id or a server's error raw on the terminal of the worker's operator.
 */
describe("consoleLine", () => {
  it("puts the fields and the error on one line", () => {
    expect(consoleLine("instance failed", { ns: "/threads", id: "t-1", error: "boom\n  at x" })).toBe(
      "[pinned] instance failed ns=/threads id=t-1: boom at x",
    );
  });

  it("shows every other control of a field or an error as its escape", () => {
    const line = consoleLine("wake failed", {
      id: "t\u001b]52;c;cGF5\u0007\u009b2K",
      error: "\u202eevil\u007f\u0000",
    });
    expect(line).toBe("[pinned] wake failed id=t\\u001b]52;c;cGF5\\u0007\\u009b2K: \\u202eevil\\u007f\\u0000");
  });
});
