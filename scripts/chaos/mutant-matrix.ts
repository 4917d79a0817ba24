/**
 * `npm run chaos -- --mutants [name,…]`: proves the campaign can fail where it matters. Each
 * known-bad patch (mutants.ts) is applied to a copy of this working tree (node_modules linked,
 * Lua modules rebuilt when a script changed), then the CI profile's campaign runs on `--seeds`
 * seeds inside that copy. A mutant is caught on a seed when the verdict names a violation; it is
 * caught when that happens on at least CAUGHT_AT_LEAST of the seeds. Prints the matrix (Markdown),
 * writes mutants.json to --out; exits 1 when a mutant escaped.
 */
import { spawn } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { applyMutant, CHAOS_MUTANTS, type ChaosMutant } from "./mutants.ts";
import { REPORT_JSON } from "./report.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The seeds a mutant must be caught on, of 5: the bar for a campaign that proves something. */
const CAUGHT_AT_LEAST = 4;
/** What the copy needs: the sources the campaign runs and the files that make them resolve. */
const COPIED = ["src", "scripts", "test/support", "bin", "package.json", "tsconfig.json"];

interface SeedResult {
  seed: number;
  caught: boolean;
  exitCode: number | null;
  violations: Record<string, number>;
  /** Why the run itself failed (no report), when it did. */
  error?: string;
}

interface MutantResult {
  name: string;
  breaks: string;
  seeds: SeedResult[];
  caught: number;
}

function parseMatrixOptions(argv: string[]) {
  // A bare --mutants (nothing after it, or another option) means every mutant.
  const args = argv.map((arg, i) => (arg === "--mutants" && !/^[a-z]/.test(argv[i + 1] ?? "") ? "--mutants=all" : arg));
  const { values } = parseArgs({
    args,
    options: {
      mutants: { type: "string" },
      seeds: { type: "string", default: "5" },
      "first-seed": { type: "string", default: "1" },
      seconds: { type: "string" },
      out: { type: "string", default: join(".tmp", "chaos-mutants") },
    },
    allowPositionals: true,
  });
  const names = values.mutants && values.mutants !== "all" ? values.mutants.split(",") : undefined;
  const mutants = names ? names.map(findMutant) : [...CHAOS_MUTANTS];
  const seeds = Number(values.seeds);
  const firstSeed = Number(values["first-seed"]);
  if (!Number.isInteger(seeds) || seeds < 1) throw new Error("--seeds: a positive integer");
  if (!Number.isInteger(firstSeed) || firstSeed < 0) throw new Error("--first-seed: an integer ≥ 0");
  const seconds = values.seconds === undefined ? undefined : Number(values.seconds);
  if (seconds !== undefined && !(Number.isInteger(seconds) && seconds > 0))
    throw new Error("--seconds: a positive integer");
  return { mutants, seeds, firstSeed, seconds, out: resolve(values.out) };
}

function findMutant(name: string): ChaosMutant {
  const mutant = CHAOS_MUTANTS.find((m) => m.name === name);
  if (!mutant) throw new Error(`--mutants: no mutant ${name} (${CHAOS_MUTANTS.map((m) => m.name).join(", ")})`);
  return mutant;
}

/** A copy of the working tree with `mutant` applied, its Lua modules rebuilt when a script changed. */
async function mutatedCopy(mutant: ChaosMutant, dir: string): Promise<void> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const entry of COPIED) {
    mkdirSync(dirname(join(dir, entry)), { recursive: true });
    cpSync(join(ROOT, entry), join(dir, entry), { recursive: true });
  }
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  const file = join(dir, mutant.file);
  writeFileSync(file, applyMutant(mutant, readFileSync(file, "utf8")));
  if (mutant.file.endsWith(".lua")) {
    const code = await runNode(["--import", "tsx", "scripts/build-lua.ts"], dir, "ignore");
    if (code !== 0) throw new Error(`mutant ${mutant.name}: rebuilding the Lua modules failed (${code})`);
  }
}

function runNode(args: string[], cwd: string, stdio: "ignore" | "inherit"): Promise<number | null> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, args, { cwd, stdio: ["ignore", stdio, stdio] });
    child.on("error", fail);
    child.on("exit", (code) => done(code));
  });
}

async function runSeed(copy: string, out: string, seed: number, seconds: number | undefined): Promise<SeedResult> {
  const args = ["--import", "tsx", "scripts/chaos/run.ts", "--profile", "ci", "--seed", String(seed), "--out", out];
  if (seconds !== undefined) args.push("--seconds", String(seconds));
  const exitCode = await runNode(args, copy, "inherit");
  const reportPath = join(out, REPORT_JSON);
  if (!existsSync(reportPath)) return { seed, caught: false, exitCode, violations: {}, error: "no report written" };
  const report = JSON.parse(readFileSync(reportPath, "utf8")) as {
    verdict: { valid: boolean; violationCounts: Record<string, number> };
  };
  return { seed, caught: !report.verdict.valid, exitCode, violations: report.verdict.violationCounts };
}

function matrixMarkdown(results: readonly MutantResult[], seeds: number): string {
  const rows = results.map((r) => {
    const kinds = new Map<string, number>();
    for (const s of r.seeds) for (const [k, n] of Object.entries(s.violations)) kinds.set(k, (kinds.get(k) ?? 0) + n);
    const found = [...kinds].map(([k, n]) => `${k} ${n}`).join(", ") || "none";
    const seedsCaught = r.seeds.map((s) => `${s.seed}${s.caught ? "✓" : "✗"}`).join(" ");
    return `| \`${r.name}\` | ${r.breaks} | ${r.caught}/${seeds} (${seedsCaught}) | ${found} |`;
  });
  return [
    "| mutant | breaks | caught on seeds | violations found (all seeds) |",
    "| --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

export async function runMutantMatrix(argv: string[]): Promise<number> {
  const options = parseMatrixOptions(argv);
  const results: MutantResult[] = [];
  for (const mutant of options.mutants) {
    const copy = join(options.out, mutant.name, "tree");
    await mutatedCopy(mutant, copy);
    const seeds: SeedResult[] = [];
    for (let i = 0; i < options.seeds; i++) {
      const seed = options.firstSeed + i;
      console.log(`chaos --mutants: ${mutant.name}, seed ${seed}`);
      seeds.push(await runSeed(copy, join(options.out, mutant.name, `seed-${seed}`), seed, options.seconds));
    }
    results.push({ name: mutant.name, breaks: mutant.breaks, seeds, caught: seeds.filter((s) => s.caught).length });
    rmSync(copy, { recursive: true, force: true });
  }
  writeFileSync(join(options.out, "mutants.json"), `${JSON.stringify(results, null, 2)}\n`);
  console.log(matrixMarkdown(results, options.seeds));
  const needed = Math.ceil((CAUGHT_AT_LEAST * options.seeds) / 5);
  const escaped = results.filter((r) => r.caught < needed);
  for (const r of escaped) console.error(`chaos --mutants: ${r.name} caught on ${r.caught} of ${options.seeds} seeds`);
  return escaped.length === 0 ? 0 : 1;
}
