import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * CI's slice of the soak: `npm run soak -- --minutes 1` as a real child process (its own Redis,
 * Pinboard process and workers; mixed traffic, churn and operator drains), which must exit 0
 * with a PASS summary: no 5xx the spec does not call for, no error in Pinboard's log, RSS within
 * its bounds. Longer soaks are run by hand: `npm run soak -- --minutes 30`.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

function runSoak(args: string[], timeoutMs: number): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn("npm", ["run", "--silent", "soak", "--", ...args], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" },
      stdio: ["ignore", "pipe", "pipe"],
      detached: true, // its own process group, so a timeout takes npm, tsx and node down together
    });
    let output = "";
    child.stdout?.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr?.on("data", (d: Buffer) => (output += d.toString()));
    const kill = () => {
      try {
        process.kill(-child.pid!, "SIGKILL");
      } catch {
        // already gone
      }
    };
    const timer = setTimeout(() => {
      kill();
      reject(new Error(`soak did not finish in ${timeoutMs} ms:\n${output}`));
    }, timeoutMs);
    process.once("exit", kill);
    child.on("error", reject);
    child.on("exit", (code) => {
      clearTimeout(timer);
      process.off("exit", kill);
      resolve({ code, output });
    });
  });
}

describe("npm run soak", () => {
  it("one minute of mixed traffic, churn and drains passes", { timeout: 240_000 }, async () => {
    const { code, output } = await runSoak(["--minutes", "1"], 230_000);
    const summary = output.split("\n").find((l) => l.startsWith("SOAK SUMMARY "));
    expect(summary, output).toMatch(/^SOAK SUMMARY result=PASS minutes=1 requests=\d+ ok=\d+ .*failures=0 /);
    expect(code, output).toBe(0);
    // Progress reports came every 10 s, with RSS and p99.
    expect(
      output.match(/^\[soak +\d+s\] .* p99 [\d.]+ ms \| pinboard rss [\d.]+ MB/gm)?.length ?? 0,
      output,
    ).toBeGreaterThanOrEqual(5);
    // It really did churn a worker and drain one.
    expect(summary).toMatch(/ churns=[1-9]\d* drains=[1-9]\d* /);
    const requests = Number(/ requests=(\d+)/.exec(summary!)![1]);
    expect(requests).toBeGreaterThan(500);
  });
});
