#!/usr/bin/env node
// `npx pinboard …`: runs the operator CLI (src/cli/main.ts) under tsx in a child Node process,
// with this package's own tsx (not whatever the working directory resolves), the same argv and
// stdio, and the child's exit status. A child killed by a signal re-raises it here.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const main = fileURLToPath(new URL("../src/cli/main.ts", import.meta.url));
const tsx = import.meta.resolve("tsx");

const child = spawn(process.execPath, ["--import", tsx, main, ...process.argv.slice(2)], { stdio: "inherit" });

// Ctrl-C reaches the child through the terminal's process group; the launcher just waits for it.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

child.on("error", (err) => {
  process.stderr.write(`pinboard: cannot start the CLI: ${err.message}\n`);
  process.exit(1);
});

child.on("exit", (code, signal) => {
  if (signal !== null) {
    process.removeAllListeners(signal);
    process.kill(process.pid, signal);
    return;
  }
  process.exit(code ?? 1);
});
