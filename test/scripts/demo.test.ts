import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterAll, expect, it } from "vitest";

/**
 * `npm run demo -- --script` end to end: an embedded Redis, the Pinboard Node entry and two
 * example workers; a counter incremented through Pinboard keeps its count when its worker is
 * SIGKILLed and comes back on the other worker. About 25 s on an idle machine; the demo gives up
 * by itself after 100 s, the test after 120 s.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
let child: ChildProcess | undefined;

afterAll(() => {
  // The demo stops its own processes; if it hangs, kill its whole process group (npm, tsx, the
  // demo, its workers and its redis-server).
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    try {
      process.kill(-child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

it("moves a counter to the other worker with its state when its worker is killed", async () => {
  child = spawn("npm", ["run", "demo", "--", "--script"], {
    cwd: ROOT,
    // The suite's own PINBOARD_TEST_* switches are not Pinboard settings (Pinboard refuses those).
    env: { ...withoutTestSwitches(process.env), PINBOARD_LOG_LEVEL: "error" },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout!.on("data", (d: Buffer) => (output += d.toString()));
  child.stderr!.on("data", (d: Buffer) => (output += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child!.once("error", reject);
    child!.once("exit", (exitCode) => resolve(exitCode));
  });

  expect(code, output).toBe(0);
  const reads = [...output.matchAll(/counter \/counter\/demo = (\d+), owned by (\S+) \(pid (\d+), epoch (\d+)\)/g)];
  expect(reads, output).toHaveLength(2);
  const [before, after] = reads.map((m) => ({
    count: Number(m[1]),
    owner: m[2],
    pid: Number(m[3]),
    epoch: BigInt(m[4]!),
  }));
  expect(before!.count).toBe(3);
  expect(after!.count).toBe(before!.count);
  expect(after!.owner).not.toBe(before!.owner);
  expect(after!.epoch).toBeGreaterThan(before!.epoch);
  expect(output).toContain(`SIGKILL ${before!.owner} (pid ${before!.pid})`);
  expect(output).toMatch(/ok: \/counter\/demo moved from \S+ to \S+ with its state intact/);
}, 120_000);

function withoutTestSwitches(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !/^PINBOARD_(TEST|PROPERTY)_/.test(name)));
}
