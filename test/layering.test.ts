import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { specifiers } from "./support/imports.ts";

/**
 * The layering docs/architecture.md draws, held by the import graph of the source text:
 *   - each folder of src imports only folders of a lower layer (FOLDER_LAYERS), so no folder
 *     cycle can form, the sweeper depends on placement and never on the data plane, and the two
 *     runtime adapters (src/runtime/node, src/runtime/workers) never import each other;
 *   - the runtime-neutral core (everything reachable from src/app.ts or src/worker.ts, wrangler's
 *     entry) never imports `node:*` and never reads `process`;
 *   - src/contract imports nothing else of the project;
 *   - the worker library (src/pinned) imports only src/contract;
 *   - nothing else in src imports the worker library.
 */

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SRC = join(ROOT, "src");

function sourcesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourcesUnder(path) : path.endsWith(".ts") ? [path] : [];
  });
}

/**
 * The code of a TypeScript file with comments removed and string literals emptied (a template
 * literal keeps its `${…}` expressions, which are code).
 */
function codeOf(text: string): string {
  let out = "";
  let i = 0;
  const templateDepth: number[] = [];
  let braces = 0;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (c === "/" && next === "/") {
      while (i < text.length && text[i] !== "\n") i++;
    } else if (c === "/" && next === "*") {
      const end = text.indexOf("*/", i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === '"' || c === "'") {
      i++;
      while (i < text.length && text[i] !== c && text[i] !== "\n") i += text[i] === "\\" ? 2 : 1;
      i++;
      out += `${c}${c}`;
    } else if (c === "`" || (c === "}" && templateDepth.length > 0 && templateDepth.at(-1) === braces)) {
      if (c === "}") templateDepth.pop();
      i++;
      while (i < text.length && text[i] !== "`" && !(text[i] === "$" && text[i + 1] === "{"))
        i += text[i] === "\\" ? 2 : 1;
      if (text[i] === "$") {
        templateDepth.push(braces);
        out += "`${";
        i += 2;
      } else {
        out += "``";
        i++;
      }
    } else {
      if (c === "{") braces++;
      if (c === "}") braces--;
      out += c;
      i++;
    }
  }
  return out;
}

interface SourceFile {
  path: string;
  imports: string[];
  code: string;
}

const files = new Map<string, SourceFile>(
  sourcesUnder(SRC).map((path) => {
    const text = readFileSync(path, "utf8");
    return [path, { path, imports: specifiers(text), code: codeOf(text) }];
  }),
);

const rel = (path: string) => relative(ROOT, path);
const projectImports = (file: SourceFile) =>
  file.imports.filter((s) => s.startsWith(".")).map((s) => resolve(dirname(file.path), s));
const inside = (path: string, folder: string) => !relative(join(SRC, folder), path).startsWith("..");

function reachableFrom(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const queue = entries.map((e) => join(SRC, e));
  while (queue.length) {
    const path = queue.pop()!;
    if (seen.has(path)) continue;
    seen.add(path);
    const file = files.get(path);
    if (!file) throw new Error(`${rel(path)} is imported but does not exist`);
    queue.push(...projectImports(file));
  }
  return seen;
}

/**
 * The layer of each folder: a folder imports only folders of a lower layer. The files at the
 * root of src (the app, its deps, config, errors, log, the entries) compose the folders and are
 * outside this rule; the core test below holds them.
 */
const FOLDER_LAYERS: Readonly<Record<string, number>> = {
  contract: 0,
  redis: 1,
  http: 1,
  auth: 2,
  audit: 2,
  outbound: 2,
  registry: 3,
  placement: 4,
  "data-plane": 5,
  operator: 5,
  sweeper: 5,
  api: 6,
  console: 7,
  "runtime/node": 8,
  "runtime/workers": 8,
  cli: 9,
};

/** The folder of a source file as FOLDER_LAYERS names it; undefined at the root of src. */
function folderOf(path: string): string | undefined {
  const parts = relative(SRC, path).split("/");
  if (parts.length === 1) return undefined;
  return parts[0] === "runtime" ? `runtime/${parts[1]}` : parts[0];
}

describe("layering", () => {
  it("every folder of src has a layer, and imports only folders of a lower one", () => {
    const problems: string[] = [];
    for (const file of files.values()) {
      const from = folderOf(file.path);
      if (from === undefined || from === "pinned") continue;
      const layer = FOLDER_LAYERS[from];
      if (layer === undefined) {
        problems.push(`${rel(file.path)}: src/${from} has no layer in FOLDER_LAYERS`);
        continue;
      }
      for (const target of projectImports(file)) {
        const to = folderOf(target);
        if (to === undefined || to === from || to === "pinned") continue;
        const targetLayer = FOLDER_LAYERS[to];
        if (targetLayer === undefined || targetLayer >= layer)
          problems.push(`${rel(file.path)} (src/${from}) imports ${rel(target)} (src/${to})`);
      }
    }
    expect(problems).toEqual([]);
  });

  it("the code scanner sees imports and process reads in code only", () => {
    const sample =
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the sample is source text; its template literal's ${…} is the code the scanner must keep
      'import { a } from "./a.ts";\nexport type { B } from "../b.ts";\nconst s = "process.env";\n// process.exit()\nconst t = `${process.env.X}`;\nawait import("node:fs");';
    expect(specifiers(sample)).toEqual(["./a.ts", "../b.ts", "node:fs"]);
    expect(codeOf(sample)).not.toContain("process.exit");
    expect(codeOf(sample).match(/\bprocess\b/g)).toHaveLength(1);
  });

  it("the core reachable from src/app.ts and src/worker.ts imports no node:* module and never reads process", () => {
    const core = reachableFrom(["app.ts", "worker.ts"]);
    expect(core.size).toBeGreaterThan(50);
    const problems: string[] = [];
    for (const path of core) {
      const file = files.get(path)!;
      for (const s of file.imports) if (s.startsWith("node:")) problems.push(`${rel(path)} imports ${s}`);
      if (/\bprocess\b/.test(file.code)) problems.push(`${rel(path)} reads process`);
    }
    expect(problems).toEqual([]);
  });

  it("src/contract imports nothing else of the project", () => {
    const problems = [...files.values()]
      .filter((f) => inside(f.path, "contract"))
      .flatMap((f) =>
        projectImports(f)
          .filter((p) => !inside(p, "contract"))
          .map((p) => `${rel(f.path)} imports ${rel(p)}`),
      );
    expect(problems).toEqual([]);
  });

  it("the worker library (src/pinned) imports only src/contract, and nothing else in src imports it", () => {
    const problems: string[] = [];
    for (const file of files.values()) {
      const fromPinned = inside(file.path, "pinned");
      for (const target of projectImports(file)) {
        if (fromPinned && !inside(target, "pinned") && !inside(target, "contract"))
          problems.push(`${rel(file.path)} imports ${rel(target)}`);
        if (!fromPinned && inside(target, "pinned"))
          problems.push(`${rel(file.path)} imports the worker library (${rel(target)})`);
      }
    }
    expect(problems).toEqual([]);
  });
});
