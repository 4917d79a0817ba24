import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { cruise, type ICruiseResult } from "dependency-cruiser";
import { afterAll, describe, expect, it } from "vitest";
import layering, { ENTRIES, LAYERS } from "../.dependency-cruiser.mjs";

/**
 * The layering docs/architecture.md draws, as dependency-cruiser reads it from the import graph
 * with the rules of .dependency-cruiser.mjs (the same `npx depcruise src` applies): each folder of
 * src imports only folders of a lower layer, the core imports no node:*, src/contract stands alone,
 * the worker library uses src/contract only and nothing imports it.
 */

const ROOT = fileURLToPath(new URL("../", import.meta.url));

async function cruiseSrc(baseDir: string): Promise<ICruiseResult> {
  const { output } = await cruise(
    ["src"],
    { ...layering.options, baseDir, validate: true, ruleSet: { forbidden: layering.forbidden } },
    {},
    {},
  );
  return output as ICruiseResult;
}

const violationsOf = (result: ICruiseResult) =>
  result.summary.violations.map((v) => `${v.rule.name}: ${v.from} → ${v.to}`);

/** A throwaway tree of src files, each given as path → source text. */
const scratch: string[] = [];
function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-layering-"));
  scratch.push(dir);
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  return dir;
}
afterAll(() => {
  for (const dir of scratch) rmSync(dir, { recursive: true, force: true });
});

describe("layering", () => {
  it("src breaks no rule", async () => {
    const result = await cruiseSrc(ROOT);
    expect(result.summary.totalCruised).toBeGreaterThan(300);
    expect(violationsOf(result)).toEqual([]);
  });

  it("every file of src is an entry or lies in a folder with a layer (or in the worker library)", async () => {
    const result = await cruiseSrc(ROOT);
    const folders = [...Object.keys(LAYERS), "pinned"].map((folder) => `src/${folder}/`);
    const outside = result.modules
      .map((m) => m.source)
      .filter((source) => source.startsWith("src/") && !ENTRIES.includes(source))
      .filter((source) => !folders.some((folder) => source.startsWith(folder)));
    expect(outside).toEqual([]);
  });

  it("refuses an upward import, type-only ones included, and one between folders of a layer", async () => {
    const dir = tree({
      "src/deps/app-deps.ts":
        'import type { SpreadReply } from "../operator/spread.ts";\nexport type X = SpreadReply;\n',
      "src/operator/spread.ts": "export interface SpreadReply {}\n",
      "src/sweeper/sweep.ts": 'import { plan } from "../data-plane/plan.ts";\nexport const s = plan;\n',
      "src/data-plane/plan.ts": "export const plan = 1;\n",
    });
    expect(violationsOf(await cruiseSrc(dir)).sort()).toEqual([
      "layer:deps: src/deps/app-deps.ts → src/operator/spread.ts",
      "layer:sweeper: src/sweeper/sweep.ts → src/data-plane/plan.ts",
    ]);
  });

  it("refuses node:* in the core, anything but contract in the worker library, and the worker library elsewhere", async () => {
    const dir = tree({
      "src/data-plane/plan.ts": 'import { readFileSync } from "node:fs";\nexport const p = readFileSync;\n',
      "src/runtime/node/listen.ts": 'import { createServer } from "node:http";\nexport const l = createServer;\n',
      "src/contract/names.ts": 'import { p } from "../data-plane/plan.ts";\nexport const n = p;\n',
      "src/pinned/lease.ts":
        'import { n } from "../contract/names.ts";\nimport { l } from "../runtime/node/listen.ts";\nexport const x = [n, l];\n',
      "src/operator/view.ts": 'import { x } from "../pinned/lease.ts";\nexport const v = x;\n',
    });
    expect(violationsOf(await cruiseSrc(dir)).sort()).toEqual([
      "contract-stands-alone: src/contract/names.ts → src/data-plane/plan.ts",
      "core-imports-node: src/data-plane/plan.ts → fs",
      "layer:contract: src/contract/names.ts → src/data-plane/plan.ts",
      "nothing-imports-pinned: src/operator/view.ts → src/pinned/lease.ts",
      "pinned-uses-contract-only: src/pinned/lease.ts → src/runtime/node/listen.ts",
    ]);
  });
});
