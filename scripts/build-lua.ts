/**
 * npm run lua — writes the generated TypeScript of the Lua scripts (scripts/lua/emit.ts), and
 * python/pinned/lua_scripts.json (src/pinned's scripts for the Python library), from the
 * .lua files of each feature (scripts/lua/sources.ts): each script's expanded source, its SHA1
 * and its typed call. Run it after editing a .lua file; commit what it writes.
 *
 * npm run lua -- --check — writes nothing; exits 1 when a generated file is missing, out of date
 * or left over (.ci/run runs it). test/contract/script-shas.test.ts holds each committed SHA1 to
 * what a real Redis' SCRIPT LOAD answers.
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { generatedFiles } from "./lua/emit.ts";
import { FEATURES, LuaSourceError, ROOT } from "./lua/sources.ts";

/** Generated script modules on disk that no feature writes any more (a folder's last script moved). */
function leftovers(expected: Map<string, string>): string[] {
  const dirs = new Set(FEATURES.map((f) => f.dir));
  for (const name of readdirSync(join(ROOT, "src"))) dirs.add(`src/${name}`);
  return [...dirs]
    .map((dir) => `${dir}/lua/scripts.generated.ts`)
    .filter((path) => !expected.has(path) && existsSync(join(ROOT, path)));
}

function current(path: string): string | undefined {
  const abs = join(ROOT, path);
  return existsSync(abs) ? readFileSync(abs, "utf8") : undefined;
}

let files: Map<string, string>;
try {
  files = generatedFiles();
} catch (err) {
  if (!(err instanceof LuaSourceError)) throw err;
  console.error(`lua: the .lua sources have problems:\n${err.message}`);
  process.exit(1);
}
const stale = [...files].filter(([path, text]) => current(path) !== text).map(([path]) => path);
const extra = leftovers(files);

if (process.argv.includes("--check")) {
  if (stale.length || extra.length) {
    for (const path of stale) console.error(`lua: ${path} is out of date`);
    for (const path of extra) console.error(`lua: ${path} is left over`);
    console.error("lua: run `npm run lua` and commit what it writes");
    process.exit(1);
  }
  console.log(`lua: ${files.size} generated files are current`);
} else {
  for (const path of stale) {
    writeFileSync(join(ROOT, path), files.get(path)!);
    console.log(`lua: wrote ${path}`);
  }
  for (const path of extra) {
    rmSync(join(ROOT, path));
    console.log(`lua: removed ${path}`);
  }
  if (!stale.length && !extra.length) console.log("lua: every generated file is current");
}
