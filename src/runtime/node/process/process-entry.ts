import { realpathSync } from "node:fs";
import { fileURLToPath } from "node:url";

/**
 * True when the module at `moduleUrl` is the process's entry script, however it was reached:
 * `npm start`, bin/pinboard.mjs, a symlink in node_modules/.bin, a forked cluster process. A
 * module that is only imported (a test, another module) is not.
 */
export function isProcessEntry(moduleUrl: string): boolean {
  const script = process.argv[1];
  if (script === undefined) return false;
  try {
    return realpathSync(script) === realpathSync(fileURLToPath(moduleUrl));
  } catch {
    return false;
  }
}
