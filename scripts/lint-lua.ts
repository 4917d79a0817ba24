/**
 * npm run lint:lua — luacheck (Debian: lua-check) over every .lua file of the features
 * (scripts/lua/sources.ts), with .luacheckrc. A file is checked as written, line numbers and all:
 * the functions its includes define (transitively) are read-only globals to it, and an include
 * file may leave its own top-level functions unused (the scripts use them). Exits 1 on any
 * warning.
 */
import { spawnSync } from "node:child_process";
import { expandIncludes, FEATURES, includesOf, type LuaFile, luaFiles, ROOT, readLua } from "./lua/sources.ts";

/** The top-level functions a file defines (what including it gives). */
function definedFunctions(file: LuaFile): string[] {
  return [...file.body.matchAll(/^local function (\w+)/gm)].map((m) => m[1]!);
}

/** luacheck's warnings for one file ("" when none). */
function luacheck(path: string, readGlobals: string[], exported: string[]): string {
  const args = ["--no-color", "--codes", "--formatter", "plain"];
  if (readGlobals.length) args.push("--read-globals", ...readGlobals);
  if (exported.length) args.push("--ignore", ...exported.map((name) => `211/${name}`));
  const run = spawnSync("luacheck", [...args, "--", path], { cwd: ROOT, encoding: "utf8" });
  if (run.error) {
    const missing = (run.error as NodeJS.ErrnoException).code === "ENOENT";
    throw missing ? new Error("luacheck not found: apt-get install lua-check") : run.error;
  }
  // 0: no warnings, 1: warnings; anything else is luacheck failing.
  if (run.status !== 0 && run.status !== 1) throw new Error(`luacheck ${path}: ${run.stderr || run.stdout}`);
  return run.stdout.trim();
}

const checked = new Set<string>();
const warnings: string[] = [];
for (const feature of FEATURES) {
  const available = includesOf(feature);
  const includeDirs = feature.includeDirs.map((dir) => `${dir}/lua/includes`);
  for (const dir of [`${feature.dir}/lua`, ...includeDirs]) {
    for (const path of luaFiles(dir)) {
      if (checked.has(path)) continue;
      checked.add(path);
      const file = readLua(path);
      const given = expandIncludes(file, available).flatMap(definedFunctions);
      const own = dir.endsWith("/includes") ? definedFunctions(file) : [];
      const out = luacheck(path, given, own);
      if (out) warnings.push(out);
    }
  }
}
if (warnings.length) {
  console.error(warnings.join("\n"));
  process.exit(1);
}
console.log(`lint:lua: ok (${checked.size} files)`);
