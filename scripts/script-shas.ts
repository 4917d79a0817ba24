/**
 * Rewrites the committed SHA1 of every Lua script (the third argument of defineScript) in
 * src/redis/scripts/ and src/pinned/durability-scripts.ts. Run after editing a script:
 * `npm run script-shas`. test/contract/script-shas.test.ts checks the committed values against a real
 * Redis' SCRIPT LOAD.
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { registeredScripts } from "../src/contract/lua-script.ts";
import "../src/redis/scripts/index.ts";
import "../src/pinned/durability-scripts.ts";

const scriptsDir = fileURLToPath(new URL("../src/redis/scripts/", import.meta.url));
const files = [
  ...readdirSync(scriptsDir).map((name) => `${scriptsDir}${name}`),
  fileURLToPath(new URL("../src/pinned/durability-scripts.ts", import.meta.url)),
];

let changed = 0;
for (const script of registeredScripts()) {
  const sha = createHash("sha1").update(script.script).digest("hex");
  if (sha === script.sha) continue;
  // defineScript("name", <source expression>, "sha"): the source may span lines.
  const pattern = new RegExp(`(defineScript\\("${script.name}",[\\s\\S]*?, )"[0-9a-fA-Z]*"\\)`);
  const file = files.find((f) => readFileSync(f, "utf8").includes(`defineScript("${script.name}",`));
  if (!file) throw new Error(`no file holds defineScript("${script.name}", …)`);
  const source = readFileSync(file, "utf8");
  if (!pattern.test(source)) throw new Error(`${file}: no defineScript("${script.name}", …, "…") to rewrite`);
  writeFileSync(file, source.replace(pattern, `$1"${sha}")`));
  console.log(`${script.name}: ${sha}`);
  changed++;
}
console.log(changed ? `updated ${changed} script SHA(s)` : "all script SHAs are current");
