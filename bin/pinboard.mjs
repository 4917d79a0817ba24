#!/usr/bin/env node
// `npx pinboard …`. `pinboard serve` starts the Node entry (dist/src/node.js, the same settings and
// Node flags as `npm start`); `pinboard mint-credential` mints a credential offline; anything else
// runs the operator CLI. Installed from the registry or a
// tarball, the package holds dist/ only and both run from it with plain Node. In a clone, the CLI
// runs from src/ under tsx (always current) and `serve` first rebuilds a stale dist/ like `npm start`.
// Either way the child gets the same argv and stdio; its exit status (or signal) is this process's.
import { spawn, spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const root = fileURLToPath(new URL("../", import.meta.url));
const args = process.argv.slice(2);
const inClone = existsSync(`${root}src/cli/main.ts`) && existsSync(`${root}scripts/build-if-stale.mjs`);

function nodeFlags() {
  const manifest = JSON.parse(readFileSync(`${root}package.json`, "utf8"));
  return String(manifest.config?.nodeFlags ?? "")
    .split(/\s+/)
    .filter(Boolean);
}

function serveCommand() {
  if (inClone) {
    const build = spawnSync(process.execPath, [`${root}scripts/build-if-stale.mjs`, root], { stdio: "inherit" });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  return ["--enable-source-maps", ...nodeFlags(), `${root}dist/src/node.js`, ...args.slice(1)];
}

/** A module of src/cli/ (`main` or `mint-credential`) with its arguments. */
function cliCommand(module, moduleArgs) {
  if (inClone) return ["--import", import.meta.resolve("tsx"), `${root}src/cli/${module}.ts`, ...moduleArgs];
  return ["--enable-source-maps", `${root}dist/src/cli/${module}.js`, ...moduleArgs];
}

function command() {
  if (args[0] === "serve") return serveCommand();
  if (args[0] === "mint-credential") return cliCommand("mint-credential", args.slice(1));
  return cliCommand("main", args);
}

const child = spawn(process.execPath, command(), { stdio: "inherit" });

// Ctrl-C reaches the child through the terminal's process group; the launcher just waits for it.
for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"]) {
  process.on(signal, () => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  });
}

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
