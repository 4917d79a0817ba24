/**
 * npm run mutate:scores — the mutation score per folder from StrykerJS' JSON report
 * (.tmp/mutation/report.json, written by `npm run mutate`): killed and timed-out mutants over
 * all mutants that were tested or had no coverage, as Stryker's own score counts them. Exits 1
 * when a folder falls below its floor (FLOORS: the measured scores, to be raised, never lowered).
 */
import { readFileSync } from "node:fs";
import { dirname } from "node:path";

interface Report {
  files: Record<string, { mutants: Array<{ status: string }> }>;
}

const FLOORS: Readonly<Record<string, number>> = {
  "src/auth": 93,
  "src/contract": 93,
  "src/data-plane": 80,
  "src/metrics": 88,
  "src/pinned": 98,
  "src/placement": 98,
  "src/registry": 96,
  "src/runtime/node/transport": 98,
};

const report = JSON.parse(readFileSync(".tmp/mutation/report.json", "utf8")) as Report;
const folders = new Map<string, { detected: number; total: number }>();
for (const [file, { mutants }] of Object.entries(report.files)) {
  const folder = dirname(file);
  const tally = folders.get(folder) ?? { detected: 0, total: 0 };
  for (const { status } of mutants) {
    if (status === "Killed" || status === "Timeout") tally.detected++;
    if (status !== "CompileError" && status !== "RuntimeError" && status !== "Ignored") tally.total++;
  }
  folders.set(folder, tally);
}
let detected = 0;
let total = 0;
const below: string[] = [];
for (const [folder, tally] of [...folders].sort(([a], [b]) => a.localeCompare(b))) {
  detected += tally.detected;
  total += tally.total;
  const score = (100 * tally.detected) / tally.total;
  if (score < (FLOORS[folder] ?? 0))
    below.push(`${folder}: ${score.toFixed(1)} % is below its floor of ${FLOORS[folder]} %`);
  console.log(
    `${folder.padEnd(28)} ${((100 * tally.detected) / tally.total).toFixed(1).padStart(5)} %  (${tally.detected}/${tally.total})`,
  );
}
console.log(`${"all".padEnd(28)} ${((100 * detected) / total).toFixed(1).padStart(5)} %  (${detected}/${total})`);
if (below.length > 0) {
  console.error(`mutate:scores:\n  ${below.join("\n  ")}`);
  process.exit(1);
}
