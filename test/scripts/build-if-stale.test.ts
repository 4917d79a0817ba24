import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

/**
 * `npm start`'s prestart builds only when dist/ is older than src/: on a fresh clone (no dist/),
 * after an edit; not on a plain restart. Run on a scratch package whose `build` script only
 * counts its runs and writes dist/src/node.js.
 */

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const SCRIPT = join(ROOT, "scripts", "build-if-stale.mjs");

function run(dir: string): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      [SCRIPT, dir],
      { cwd: dir, env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "" } },
      (err, _stdout, stderr) => resolve({ code: err ? Number(err.code ?? 1) : 0, stderr }),
    ),
  );
}

describe("scripts/build-if-stale.mjs", { timeout: 20_000 }, () => {
  it("builds with no dist/, skips when dist/ is newer than src/, builds again after an edit", async () => {
    const dir = mkdtempSync(join(tmpdir(), "pinboard-build-"));
    mkdirSync(join(dir, "src", "sub"), { recursive: true });
    writeFileSync(join(dir, "src", "sub", "a.ts"), "export {};\n");
    const build = "mkdir -p dist/src && echo built > dist/src/node.js && echo x >> builds";
    writeFileSync(join(dir, "package.json"), JSON.stringify({ name: "scratch", private: true, scripts: { build } }));
    const builds = () => readFileSync(join(dir, "builds"), "utf8").split("\n").filter(Boolean).length;
    // Sources from the past, so a build in the same second is unambiguously newer.
    const past = new Date(Date.now() - 60_000);
    utimesSync(join(dir, "src", "sub", "a.ts"), past, past);

    const fresh = await run(dir);
    expect(fresh.code).toBe(0);
    expect(fresh.stderr).toContain("building dist/ (no dist/ yet)");
    expect(builds()).toBe(1);

    const again = await run(dir);
    expect(again.code).toBe(0);
    expect(again.stderr).toContain("skipping the build");
    expect(builds()).toBe(1);

    const future = new Date(Date.now() + 60_000);
    utimesSync(join(dir, "src", "sub", "a.ts"), future, future);
    const edited = await run(dir);
    expect(edited.stderr).toContain(`building dist/ (${join("src", "sub", "a.ts")} changed since the last build)`);
    expect(builds()).toBe(2);
  });

  it("is npm start's prestart", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.prestart).toBe("node scripts/build-if-stale.mjs");
    expect(pkg.scripts.build).toBe("tsc -p tsconfig.build.json");
  });
});
