#!/usr/bin/env node
// `npx pinboard …`. `pinboard serve` starts the Node entry (dist/src/node.js, the same settings and
// Node flags as `npm start`); `pinboard mint-credential` mints a credential offline;
// `pinboard check-worker` checks a worker against the worker contract; anything else runs the
// operator CLI. Installed from the registry or a
// tarball, the package holds dist/ only and both run from it with plain Node. In a clone, the CLI
// runs from src/ under tsx (always current) and `serve` first rebuilds a stale dist/ like `npm start`.
// Either way the child gets the same argv and stdio; its exit status (or signal) is this process's.
// SIGTERM, SIGINT and SIGHUP are passed on (see stopChild), also when the parent dies (npx).
import { spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { startNodeFlags } from "./node-flags.mjs";

const root = fileURLToPath(new URL("../", import.meta.url));
const args = process.argv.slice(2);
const inClone = existsSync(`${root}src/cli/main.ts`) && existsSync(`${root}scripts/build-if-stale.mjs`);

function serveCommand() {
  if (inClone) {
    const build = spawnSync(process.execPath, [`${root}scripts/build-if-stale.mjs`, root], { stdio: "inherit" });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  return ["--enable-source-maps", ...startNodeFlags(), `${root}dist/src/node.js`, ...args.slice(1)];
}

/** A module of src/cli/ (`main` or `mint-credential`) with its arguments. */
function cliCommand(module, moduleArgs) {
  if (inClone) return ["--import", import.meta.resolve("tsx"), `${root}src/cli/${module}.ts`, ...moduleArgs];
  return ["--enable-source-maps", `${root}dist/src/cli/${module}.js`, ...moduleArgs];
}

function command() {
  if (args[0] === "serve") return serveCommand();
  if (args[0] === "mint-credential") return cliCommand("mint-credential", args.slice(1));
  if (args[0] === "check-worker") return cliCommand("check-worker/main", args.slice(1));
  if (args[0] === "help" && args[1] === "check-worker") return cliCommand("check-worker/main", ["--help"]);
  return cliCommand("main", args);
}

// `serve` has a process group of its own, so that each signal reaches it once, from here: a
// Ctrl-C (which the terminal sends to its foreground group) would otherwise reach it twice, and
// the second signal forces a stop. It reads nothing from the terminal.
const child = spawn(process.execPath, command(), { stdio: "inherit", detached: args[0] === "serve" });

let signals = 0;

/**
 * Stops the child with `signal`: the first one stops it gracefully (`serve` stops the server and
 * the redis-server it started, and exits 0), a second forces it (it exits 1 at once, killing its
 * redis-server), a third SIGKILLs `serve`'s whole process group, in case it hangs. SIGHUP (the
 * terminal closed) stops it like SIGTERM.
 */
function stopChild(signal) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  if (++signals >= 3 && args[0] === "serve") process.kill(-child.pid, "SIGKILL");
  else child.kill(signal === "SIGHUP" ? "SIGTERM" : signal);
}
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) process.on(signal, () => stopChild(signal));

// Under `npx pinboard serve` the parent is `sh -c`, which npm signals and which dies without
// passing the signal on: a launcher whose parent went away stops the child as on SIGTERM, rather
// than leave the server and its redis-server running with nobody to stop them.
const parent = process.ppid;
const orphaned = setInterval(() => {
  if (process.ppid === parent) return;
  clearInterval(orphaned);
  stopChild("SIGTERM");
}, 250);
orphaned.unref();

child.on("error", (err) => {
  process.stderr.write(`pinboard: cannot start: ${err.message}\n`);
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
