import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { until } from "../../../support/local-worker.ts";

const ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

/** A parent that spawns `count` sleeping children through reapOnExit, prints their pids and the number of its 'exit' listeners, then exits. */
const PARENT = `
import { spawn } from "node:child_process";
import { reapOnExit } from "./src/runtime/node/process/reap-on-exit.ts";
const before = process.listenerCount("exit");
const pids = [];
for (let i = 0; i < Number(process.argv.at(-1)); i++) {
  const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
  reapOnExit(child);
  pids.push(child.pid);
}
console.log(JSON.stringify({ pids, listenersAdded: process.listenerCount("exit") - before }));
setTimeout(() => process.exit(0), 200);
`;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("reapOnExit", () => {
  it("kills every child when the parent exits, with one 'exit' listener for all of them", async () => {
    const parent = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", PARENT, "--", "12"], {
      cwd: ROOT,
      stdio: ["ignore", "pipe", "inherit"],
    });
    let out = "";
    parent.stdout.on("data", (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((resolve) => parent.once("exit", resolve));
    expect(code).toBe(0);
    const { pids, listenersAdded } = JSON.parse(out.trim()) as { pids: number[]; listenersAdded: number };
    expect(pids).toHaveLength(12);
    expect(listenersAdded).toBe(1);
    // SIGKILL is delivered at once; the pid is gone once its zombie is reaped by init.
    await until(() => pids.every((pid) => !alive(pid)));
  });
});
