#!/usr/bin/env node
// `npm start`'s prestart: runs `npm run build` only when dist/ is older than its sources, so a
// restart without edits starts at once. Stale means: no dist/src/node.js yet (a fresh clone), or
// a file under src/ (or bench/pinboard-main.ts, tsconfig.json, tsconfig.build.json) modified
// after it. `npm run build` always compiles. Usage: node scripts/build-if-stale.mjs [root]
import { spawnSync } from "node:child_process";
import { readdirSync, statSync, utimesSync } from "node:fs";
import { join, relative, resolve } from "node:path";

const root = resolve(process.argv[2] ?? process.cwd());
const OUTPUT = join(root, "dist", "src", "node.js");
const INPUTS = ["src", "bench/pinboard-main.ts", "tsconfig.json", "tsconfig.build.json"];

/** The newest modification time (ms) under `path`, and the file that has it. */
function newest(path) {
  let stat;
  try {
    stat = statSync(path);
  } catch {
    return { mtimeMs: -Infinity, file: undefined };
  }
  if (!stat.isDirectory()) return { mtimeMs: stat.mtimeMs, file: path };
  let best = { mtimeMs: -Infinity, file: undefined };
  for (const entry of readdirSync(path)) {
    const found = newest(join(path, entry));
    if (found.mtimeMs > best.mtimeMs) best = found;
  }
  return best;
}

function outputTime() {
  try {
    return statSync(OUTPUT).mtimeMs;
  } catch {
    return undefined;
  }
}

const built = outputTime();
let reason;
if (built === undefined) {
  reason = "no dist/ yet";
} else {
  const inputs = INPUTS.map((p) => newest(join(root, p))).reduce((a, b) => (b.mtimeMs > a.mtimeMs ? b : a));
  if (inputs.mtimeMs > built) reason = `${relative(root, inputs.file)} changed since the last build`;
}

if (reason === undefined) {
  console.error("dist/ is newer than src/: skipping the build (`npm run build` forces one)");
  process.exit(0);
}
console.error(`building dist/ (${reason})`);
const npm = process.env.npm_execpath;
const run = npm
  ? spawnSync(process.execPath, [npm, "run", "-s", "build"], { cwd: root, stdio: "inherit" })
  : spawnSync("npm", ["run", "-s", "build"], { cwd: root, stdio: "inherit", shell: process.platform === "win32" });
if (run.error) {
  console.error(`cannot run npm run build: ${run.error.message}`);
  process.exit(1);
}
if (run.status !== 0) {
  // tsc writes its output even when it reports errors: make sure the next start builds again.
  try {
    utimesSync(OUTPUT, 0, 0);
  } catch {
    // Nothing was written.
  }
}
process.exit(run.status ?? 1);
