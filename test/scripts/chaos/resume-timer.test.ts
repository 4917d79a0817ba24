import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { ResumeTimer } from "../../../scripts/chaos/resume-timer.ts";

/** The edge-timed pause's SIGCONT, sent from a thread of its own at the time asked, not before. */

let child: ChildProcess | undefined;

afterEach(() => {
  child?.kill("SIGKILL");
  child = undefined;
});

/** The process's state letter in /proc: T when stopped. */
function state(pid: number): string {
  return readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]![0]!;
}

describe("resume timer", () => {
  it("resumes a stopped process at the time asked, not before", async () => {
    child = spawn("sleep", ["30"]);
    const pid = child.pid!;
    const timer = new ResumeTimer();
    for (const leadMs of [150, 300]) {
      child.kill("SIGSTOP");
      await new Promise((r) => setTimeout(r, 20));
      expect(state(pid)).toBe("T");
      const at = Date.now() + leadMs;
      const sentAt = await timer.resumeAt(pid, at);
      expect(sentAt).toBeGreaterThanOrEqual(at);
      expect(sentAt - at).toBeLessThan(1000); // a loaded machine; the campaign records the real error
      await new Promise((r) => setTimeout(r, 20));
      expect(state(pid)).not.toBe("T");
    }
  });

  it("fails when the process is gone", async () => {
    await expect(new ResumeTimer().resumeAt(2 ** 22 + 12_345, Date.now())).rejects.toThrow(/ESRCH/);
  });
});
