import { mkdtempSync, readdirSync, rmSync, symlinkSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type GroupProcess, spawnGroup } from "../../scripts/spawn-group.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * The clone, linked entry by entry into a folder of the test's own, `.pinboard/` left out: `npm
 * start`, `pinboard serve` and `npm run dev` keep their dev store and development key under the
 * working folder's `.pinboard/`, and a developer's own start in the clone (or an earlier run's
 * store) must not be the test's. `remove()` deletes the folder, never what its links point at.
 */
export function cloneLayout(): { dir: string; remove(): void } {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-clone-"));
  for (const entry of readdirSync(ROOT)) {
    if (entry !== ".pinboard") symlinkSync(join(ROOT, entry), join(dir, entry));
  }
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** Runs `command` in the folder `dir` (a clone's) as a process group of its own (spawnGroup), with PATH, HOME and `env` only. */
export function spawnInClone(dir: string, command: string[], env: Record<string, string>): GroupProcess {
  return spawnGroup(command[0]!, command.slice(1), {
    cwd: dir,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", ...env },
  });
}
