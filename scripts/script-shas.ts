/**
 * Rewrites the committed SHA1 of every Lua script in src/redis/scripts/ (the third argument of
 * defineScript). Run after editing a script: `npm run script-shas`. test/script-shas.test.ts
 * checks the committed values against a real Redis' SCRIPT LOAD.
 */
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { registeredScripts } from "../src/redis/script.ts";
import "../src/redis/scripts/index.ts";

const dir = fileURLToPath(new URL("../src/redis/scripts/", import.meta.url));
let changed = 0;
for (const script of registeredScripts()) {
  const sha = createHash("sha1").update(script.script).digest("hex");
  if (sha === script.sha) continue;
  const file = `${dir}${script.name}.ts`;
  const source = readFileSync(file, "utf8");
  const pattern = new RegExp(`(defineScript\\("${script.name}", LUA, )"[0-9a-f]*"\\)`);
  if (!pattern.test(source)) throw new Error(`${file}: no defineScript("${script.name}", LUA, "…") to rewrite`);
  writeFileSync(file, source.replace(pattern, `$1"${sha}")`));
  console.log(`${script.name}: ${sha}`);
  changed++;
}
console.log(changed ? `updated ${changed} script SHA(s)` : "all script SHAs are current");
