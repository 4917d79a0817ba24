// The Node flags `npm start` runs the Node entry with (package.json `config.nodeFlags`), read in
// this one place: `pinboard serve` (bin/pinboard.mjs) starts the entry with them, and the bench,
// the soak and the compiled-entry test start Pinboard exactly so. Plain JavaScript: it ships in
// the package beside bin/pinboard.mjs. Why these flags: README, Performance.
import { readFileSync } from "node:fs";

/** package.json's `config.nodeFlags`, one flag per element. */
export function startNodeFlags() {
  const manifest = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  return String(manifest.config?.nodeFlags ?? "")
    .split(/\s+/)
    .filter(Boolean);
}
