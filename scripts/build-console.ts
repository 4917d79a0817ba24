/**
 * npm run build:console: bundles the operator console (src/console/page/: index.html, console.css
 * and views.css, and the TypeScript from main.ts) into one HTML document with its script and
 * style inline, and writes it with its Content-Security-Policy to src/console/assets.generated.ts,
 * which both entries serve (the Worker bundles it like any module). test/console/assets.test.ts
 * fails when the committed file is not what this would write. `--check` only compares.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { consoleAssets } from "./console-assets.ts";

const OUT = fileURLToPath(new URL("../src/console/assets.generated.ts", import.meta.url));
const next = await consoleAssets();
let current = "";
try {
  current = readFileSync(OUT, "utf8");
} catch {
  current = "";
}
if (process.argv.includes("--check")) {
  if (current !== next) {
    console.error("src/console/assets.generated.ts is stale: run npm run build:console");
    process.exit(1);
  }
  console.log("console assets are current");
} else if (current === next) {
  console.log("console assets are current");
} else {
  writeFileSync(OUT, next);
  console.log(`wrote src/console/assets.generated.ts (${next.length} bytes)`);
}
