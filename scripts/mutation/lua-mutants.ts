/**
 * npm run mutate:lua -- <script.lua> … [--tests <test file> …] [--max N]
 *
 * Mutation testing for the Lua scripts, which StrykerJS cannot read: each mutant flips one
 * comparison or boolean operator, or drops one `not`, in one script; the generated TypeScript is
 * rebuilt (npm run lua), the given test files run against a real redis-server, and the mutant
 * counts as killed when they fail. The script and its generated file are restored after each
 * mutant and at exit. Prints every survivor and the kill count.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";

const FLIPS: ReadonlyArray<[RegExp, string]> = [
  [/==/g, "~="],
  [/~=/g, "=="],
  [/<=/g, ">"],
  [/>=/g, "<"],
  [/(?<![<>~=])<(?!=)/g, ">="],
  [/(?<![<>~=-])>(?!=)/g, "<="],
  [/\band\b/g, "or"],
  [/\bor\b/g, "and"],
  [/\bnot /g, ""],
];

interface Mutant {
  line: number;
  before: string;
  after: string;
}

/** One mutant per operator occurrence, in code only (not in comments or the header). */
export function mutantsOf(source: string): Mutant[] {
  const lines = source.split("\n");
  const headerEnd = source.startsWith("--[[") ? source.slice(0, source.indexOf("]]")).split("\n").length : 0;
  const out: Mutant[] = [];
  lines.forEach((text, i) => {
    if (i < headerEnd) return;
    const code = text.replace(/--.*$/, "").replace(/'(?:[^'\\]|\\.)*'/g, (s) => " ".repeat(s.length));
    for (const [pattern, replacement] of FLIPS) {
      for (const m of code.matchAll(pattern)) {
        const at = m.index ?? 0;
        out.push({ line: i, before: text, after: text.slice(0, at) + replacement + text.slice(at + m[0].length) });
      }
    }
  });
  return out;
}

function run(args: string[]): { scripts: string[]; tests: string[]; max: number } {
  const scripts: string[] = [];
  const tests: string[] = [];
  let max = Number.POSITIVE_INFINITY;
  let target = scripts;
  for (let i = 0; i < args.length; i++) {
    if (args[i] === "--tests") target = tests;
    else if (args[i] === "--max") max = Number(args[++i]);
    else target.push(args[i]!);
  }
  if (scripts.length === 0 || tests.length === 0) {
    console.error("usage: npm run mutate:lua -- <script.lua> … --tests <test file> … [--max N]");
    process.exit(2);
  }
  return { scripts, tests, max };
}

function testsPass(tests: string[]): boolean {
  return spawnSync("npx", ["vitest", "run", ...tests], { stdio: "ignore" }).status === 0;
}

const { scripts, tests, max } = run(process.argv.slice(2));
const originals = new Map(scripts.map((f) => [f, readFileSync(f, "utf8")]));
const restore = () => {
  for (const [file, text] of originals) writeFileSync(file, text);
  execFileSync("npx", ["tsx", "scripts/build-lua.ts"], { stdio: "ignore" });
};
process.on("SIGINT", () => {
  restore();
  process.exit(130);
});

if (!testsPass(tests)) {
  console.error("mutate:lua: the tests fail before any mutant; nothing to measure");
  process.exit(1);
}
let killed = 0;
let total = 0;
try {
  for (const file of scripts) {
    const source = originals.get(file)!;
    for (const mutant of mutantsOf(source).slice(0, max)) {
      const lines = source.split("\n");
      lines[mutant.line] = mutant.after;
      writeFileSync(file, lines.join("\n"));
      execFileSync("npx", ["tsx", "scripts/build-lua.ts"], { stdio: "ignore" });
      total++;
      if (testsPass(tests)) console.log(`survived ${file}:${mutant.line + 1}: ${mutant.after.trim()}`);
      else killed++;
    }
    writeFileSync(file, source);
  }
} finally {
  restore();
}
console.log(`mutate:lua: ${killed} of ${total} mutants killed (${tests.join(", ")})`);
