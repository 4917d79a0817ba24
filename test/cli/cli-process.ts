import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";

/**
 * The operator CLI as operators run it: a process of its own (`node --import tsx
 * src/cli/main.ts`, or through the bin/pinboard.mjs launcher), with only PATH, HOME and `env` in
 * its environment, so nothing of the test runner's environment leaks into what it reads.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function spawnCli(
  args: readonly string[],
  options: { env?: Record<string, string>; launcher?: boolean } = {},
): Promise<CliRun> {
  const entry = options.launcher ? ["bin/pinboard.mjs"] : ["--import", "tsx", "src/cli/main.ts"];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...entry, ...args],
      {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...options.env },
        timeout: 30_000,
      },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr }),
    );
  });
}
