/**
 * The Lua scripts as files: each feature folder of src keeps its scripts in `lua/`, named
 * `<script>-<numKeys>.lua` (numKeys: its fixed KEYS), and shared helpers in `lua/includes/`.
 * A file opens with a `--[[ … ]]` header naming every KEYS and ARGV entry, one per line:
 *
 *   KEYS[1] placements   hash id → row            a fixed entry: a field of the typed call
 *   KEYS[5 …] nsLists    three keys each …        a variadic one (a list), after the fixed ones
 *   ARGV[4] noEpoch?     "1" when …               an optional trailing ARGV entry
 *
 * (lines indented under an entry continue its description), then `--- @include "name"` lines,
 * then the body. Expanding a script pastes each include once, its own includes first, ahead of
 * the body: the text Redis runs, self-contained. Headers and directives are not part of it.
 */
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** A feature folder with Lua scripts, and the folders (own first) its includes are looked up in. */
export interface Feature {
  dir: string;
  includeDirs: string[];
  /** Whether its generated module has typed calls (RedisPort's ScriptCall; not in src/pinned). */
  calls: boolean;
}

/** The worker library (src/pinned) imports only src/contract, so it includes only its own helpers. */
export const FEATURES: readonly Feature[] = [
  { dir: "src/redis", includeDirs: ["src/redis"], calls: true },
  { dir: "src/audit", includeDirs: ["src/audit", "src/redis"], calls: true },
  { dir: "src/registry", includeDirs: ["src/registry", "src/redis"], calls: true },
  { dir: "src/placement", includeDirs: ["src/placement", "src/redis"], calls: true },
  { dir: "src/operator", includeDirs: ["src/operator", "src/redis"], calls: true },
  { dir: "src/sweeper", includeDirs: ["src/sweeper", "src/redis"], calls: true },
  { dir: "src/pinned", includeDirs: ["src/pinned"], calls: false },
];

export interface Entry {
  kind: "KEYS" | "ARGV";
  name: string;
  /** The 1-based index of a fixed entry; the first index of a variadic one, when its header says. */
  index: number | undefined;
  variadic: boolean;
  /** What the header has between the brackets ("5", "4+3L …"). */
  spec: string;
  optional: boolean;
  doc: string;
}

/** One .lua file, parsed. */
export interface LuaFile {
  /** Repository-relative path. */
  path: string;
  header: string;
  includes: string[];
  /** The code after the header and directives, ending in one newline. */
  body: string;
}

export interface LuaScriptSource {
  name: string;
  feature: Feature;
  file: LuaFile;
  keys: Entry[];
  argv: Entry[];
  /** The include files pasted into it, in order. */
  includes: LuaFile[];
  /** The expanded text Redis runs, and its SHA1 (what SCRIPT LOAD answers). */
  source: string;
  sha: string;
}

const ENTRY = /^(\s*)(KEYS|ARGV)\[([^\]]+)\]\s+([A-Za-z_]\w*)(\?)?(?:\s+(.*))?$/;
const DIRECTIVE = /^--- @include "([\w-]+)"\s*$/;

export class LuaSourceError extends Error {}

export function parseLuaFile(path: string, text: string): LuaFile {
  const lines = text.split("\n");
  let at = 0;
  let header = "";
  if (lines[0]?.startsWith("--[[")) {
    const end = lines.findIndex((line) => line.startsWith("]]"));
    if (end < 0) throw new LuaSourceError(`${path}: the header --[[ … is not closed by ]] at a line's start`);
    header = lines.slice(0, end + 1).join("\n");
    at = end + 1;
  }
  const includes: string[] = [];
  for (; at < lines.length; at++) {
    const line = lines[at]!;
    const m = DIRECTIVE.exec(line);
    if (m) includes.push(m[1]!);
    else if (line.trim() !== "") break;
  }
  const rest = lines.slice(at);
  const stray = rest.findIndex((line) => line.startsWith("--- @include"));
  if (stray >= 0) throw new LuaSourceError(`${path}:${at + stray + 1}: an @include after the code starts`);
  return { path, header, includes, body: `${rest.join("\n").trimEnd()}\n` };
}

/** The KEYS and ARGV entries a header names, in order. */
export function parseEntries(path: string, header: string): Entry[] {
  const entries: Entry[] = [];
  let indent = -1;
  for (const line of header.split("\n")) {
    const m = ENTRY.exec(line);
    if (m) {
      const [, lead, kind, spec, name, optional, doc] = m;
      const variadic = spec!.includes("…");
      if (!variadic && !/^\d+$/.test(spec!)) throw new LuaSourceError(`${path}: ${kind}[${spec}]: not an index`);
      const index = /^\d+/.exec(spec!)?.[0];
      entries.push({
        kind: kind as Entry["kind"],
        name: name!,
        index: index === undefined ? undefined : Number(index),
        variadic,
        spec: spec!,
        optional: optional === "?",
        doc: doc?.trim() ?? "",
      });
      indent = lead!.length;
    } else if (/^\s*(KEYS|ARGV)\[/.test(line)) {
      throw new LuaSourceError(`${path}: a header line names ${line.trim()} without a field name`);
    } else if (indent >= 0 && line.trim() !== "" && line.length - line.trimStart().length > indent) {
      const last = entries.at(-1)!;
      last.doc = `${last.doc} ${line.trim()}`.trim();
    } else {
      indent = -1;
    }
  }
  return entries;
}

/** Problems with one kind's entries: fixed 1…n first, then variadic; optional ones last. */
function entryProblems(path: string, entries: Entry[]): string[] {
  const problems: string[] = [];
  const names = new Set<string>();
  entries.forEach((e, i) => {
    if (names.has(e.name)) problems.push(`${path}: ${e.kind} names ${e.name} twice`);
    names.add(e.name);
    if (!e.variadic && e.index !== i + 1) problems.push(`${path}: ${e.kind}[${e.index}] is not entry ${i + 1}`);
    if (!e.variadic && entries.slice(0, i).some((x) => x.variadic))
      problems.push(`${path}: ${e.kind}[${e.index}] follows a variadic entry`);
    if (e.optional && (e.kind === "KEYS" || e.variadic || entries.slice(i + 1).some((x) => !x.optional)))
      problems.push(`${path}: ${e.kind} ${e.name}: only trailing fixed ARGV entries may be optional`);
  });
  return problems;
}

/** Every KEYS[n] and ARGV[n] the text uses is a fixed entry or within a variadic one, and every fixed entry is used. */
function usageProblems(path: string, kind: Entry["kind"], entries: Entry[], source: string): string[] {
  const fixed = entries.filter((e) => !e.variadic).length;
  const firstVariadic = entries.find((e) => e.variadic)?.index;
  const used = new Set([...source.matchAll(new RegExp(`${kind}\\[(\\d+)\\]`, "g"))].map((m) => Number(m[1])));
  const problems: string[] = [];
  for (const n of used) {
    if (n > fixed && (firstVariadic === undefined || n < firstVariadic))
      problems.push(`${path}: uses ${kind}[${n}], which its header does not name`);
  }
  for (let n = 1; n <= fixed; n++) {
    if (!used.has(n)) problems.push(`${path}: its header names ${kind}[${n}], which it never uses`);
  }
  return problems;
}

/** The .lua files directly in a folder (repository-relative), in name order; none when it is missing. */
export function luaFiles(dir: string): string[] {
  const abs = join(ROOT, dir);
  if (!existsSync(abs)) return [];
  return readdirSync(abs)
    .filter((name) => name.endsWith(".lua"))
    .sort()
    .map((name) => `${dir}/${name}`);
}

export function readLua(path: string): LuaFile {
  return parseLuaFile(path, readFileSync(join(ROOT, path), "utf8"));
}

/** The include files within a feature's reach, by name. */
export function includesOf(feature: Feature): Map<string, LuaFile> {
  const found = new Map<string, LuaFile>();
  for (const dir of feature.includeDirs) {
    for (const path of luaFiles(`${dir}/lua/includes`)) {
      const name = path.slice(path.lastIndexOf("/") + 1, -".lua".length);
      const other = found.get(name);
      if (other) throw new LuaSourceError(`${path}: shadows ${other.path} (include names are unique)`);
      found.set(name, readLua(path));
    }
  }
  return found;
}

/** The includes a file pastes, each once, its own includes ahead of it. */
export function expandIncludes(file: LuaFile, available: Map<string, LuaFile>): LuaFile[] {
  const order: LuaFile[] = [];
  const visit = (from: LuaFile, stack: string[]) => {
    for (const name of from.includes) {
      const inc = available.get(name);
      if (!inc) throw new LuaSourceError(`${from.path}: @include "${name}": no lua/includes/${name}.lua in reach`);
      if (stack.includes(name)) throw new LuaSourceError(`${from.path}: @include "${name}" forms a cycle`);
      if (order.includes(inc)) continue;
      visit(inc, [...stack, name]);
      order.push(inc);
    }
  };
  visit(file, []);
  return order;
}

function scriptOf(feature: Feature, path: string, available: Map<string, LuaFile>, problems: string[]) {
  const m = /\/([a-z0-9-]+?)-(\d+)\.lua$/.exec(path);
  if (!m) {
    problems.push(`${path}: a script is named <name>-<numKeys>.lua`);
    return undefined;
  }
  const file = readLua(path);
  if (!/\breturns\b/i.test(file.header)) problems.push(`${path}: no --[[ … ]] header saying what it returns`);
  const entries = parseEntries(path, file.header);
  const keys = entries.filter((e) => e.kind === "KEYS");
  const argv = entries.filter((e) => e.kind === "ARGV");
  const includes = expandIncludes(file, available);
  const source = [...includes.map((inc) => inc.body), file.body].map((body) => `\n${body}`).join("");
  const fixedKeys = keys.filter((e) => !e.variadic).length;
  if (Number(m[2]) !== fixedKeys) problems.push(`${path}: names ${fixedKeys} fixed KEYS, not ${m[2]}`);
  problems.push(...entryProblems(path, keys), ...entryProblems(path, argv));
  problems.push(...usageProblems(path, "KEYS", keys, source), ...usageProblems(path, "ARGV", argv, source));
  const sha = createHash("sha1").update(source).digest("hex");
  return { name: m[1]!, feature, file, keys, argv, includes, source, sha };
}

/** Every script of every feature, expanded; throws listing every problem found. */
export function readScripts(): LuaScriptSource[] {
  const problems: string[] = [];
  const scripts: LuaScriptSource[] = [];
  for (const feature of FEATURES) {
    const available = includesOf(feature);
    for (const path of luaFiles(`${feature.dir}/lua`)) {
      try {
        const script = scriptOf(feature, path, available, problems);
        if (script) scripts.push(script);
      } catch (err) {
        if (!(err instanceof LuaSourceError)) throw err;
        problems.push(err.message);
      }
    }
  }
  const seen = new Set<string>();
  for (const s of scripts) {
    if (seen.has(s.name)) problems.push(`${s.file.path}: a second script named ${s.name}`);
    seen.add(s.name);
  }
  if (problems.length) throw new LuaSourceError(problems.join("\n"));
  return scripts;
}
