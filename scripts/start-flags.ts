import { readFileSync } from "node:fs";

/**
 * The V8 flags `npm start` runs the Node entry with (package.json `config.nodeFlags`): the bench
 * and the compiled-entry test start Pinboard exactly so. Why these flags: README, Performance.
 */
export function startNodeFlags(): string[] {
  const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as {
    config?: { nodeFlags?: string };
  };
  return (pkg.config?.nodeFlags ?? "").split(/\s+/).filter(Boolean);
}
