/**
 * What a chaos run leaves behind: chaos-report.json (the verdict, the faults and the history's
 * counts, not the history itself), chaos-availability.svg (availability-svg.ts), and the summary
 * the terminal prints.
 */

import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { renderAvailabilitySvg } from "./availability-svg.ts";
import type { History } from "./history.ts";
import { LAYERS } from "./layers.ts";
import type { OutcomeCounts, Verdict } from "./verdict.ts";

export const REPORT_JSON = "chaos-report.json";
export const AVAILABILITY_SVG = "chaos-availability.svg";

/** How many violation details the summary prints. */
const DETAILS_SHOWN = 5;

export interface ChaosReport {
  summary: string[];
  history: {
    operations: number;
    faults: number;
    served: number;
    userDbWrites: number;
    finalReads: number;
    started: number;
    ended: number;
    durationMs: number;
    leaseTtlMs: number;
  };
  faults: History["faults"];
  verdict: Verdict;
}

/** Writes both files into `dir` (created if missing); returns their paths. */
export async function writeReport(
  dir: string,
  history: History,
  verdict: Verdict,
): Promise<{ json: string; svg: string }> {
  await mkdir(dir, { recursive: true });
  const json = join(dir, REPORT_JSON);
  const svg = join(dir, AVAILABILITY_SVG);
  await writeFile(json, `${JSON.stringify(buildReport(history, verdict), null, 2)}\n`);
  await writeFile(svg, renderAvailabilitySvg(history, verdict.stats.availability));
  return { json, svg };
}

export function buildReport(history: History, verdict: Verdict): ChaosReport {
  return {
    summary: summarize(verdict).split("\n"),
    history: {
      operations: history.operations.length,
      faults: history.faults.length,
      served: history.served.length,
      userDbWrites: history.userDb.length,
      finalReads: Object.keys(history.finalReads).length,
      started: history.started,
      ended: history.ended,
      durationMs: history.ended - history.started,
      leaseTtlMs: history.leaseTtlMs,
    },
    faults: history.faults,
    verdict,
  };
}

export function summarize(verdict: Verdict): string {
  const { operations, faults, recovery, userDb, availability } = verdict.stats;
  const violations = Object.values(verdict.violationCounts).reduce((sum, n) => sum + (n ?? 0), 0);
  const measured = availability.filter((s) => s.ratio !== null);
  const worst = measured.reduce<(typeof measured)[number] | undefined>(
    (a, b) => (a === undefined || b.ratio! < a.ratio! ? b : a),
    undefined,
  );
  const okTotal = measured.reduce((sum, s) => sum + s.ok, 0);
  const lines = [
    `chaos: ${violations === 0 ? "no violations" : `${violations} VIOLATIONS`}; recovery SLO ${verdict.sloMet ? "met" : `MISSED (${verdict.sloViolations.length} slow)`}`,
    `operations: ${operations.total} (${outcomes(operations.byOutcome)}); ${Object.entries(operations.byKind)
      .map(([kind, counts]) => `${kind} ${outcomes(counts)}`)
      .join("; ")}`,
    `faults: ${faults.total}${faults.total > 0 ? ` (${counts(faults.byKind)})` : ""}`,
    `violations: ${violations === 0 ? "none" : counts(verdict.violationCounts)}`,
    `recovery: ${recovery.measured} fault-keys, p50 ${ms(recovery.p50Ms)}, p99 ${ms(recovery.p99Ms)}, max ${ms(recovery.maxMs)} (limit ${recovery.limitMs} ms)`,
    `availability: ${percent(operations.total === 0 ? null : okTotal / operations.total)} overall, worst second ${worst === undefined ? "-" : `${worst.second} at ${percent(worst.ratio)}`}`,
    `user db: ${userDb.accepted} writes taken, ${userDb.refused} refused by the fence`,
  ];
  if (verdict.stats.layers) lines.push(layerLine(verdict.stats.layers));
  for (const violation of verdict.violations.slice(0, DETAILS_SHOWN))
    lines.push(`  ${violation.kind} ${violation.key}: ${violation.detail}`);
  for (const slow of verdict.sloViolations.slice(0, DETAILS_SHOWN))
    lines.push(`  ${slow.kind} ${slow.key}: ${slow.detail}`);
  return lines.join("\n");
}

/** "layers on: store-fence 3, user-fence 12; off: is-current, lease-guard". */
function layerLine({ on, refusals }: NonNullable<Verdict["stats"]["layers"]>): string {
  const off = LAYERS.filter((layer) => !on.includes(layer));
  const kept = on.length === 0 ? "none" : on.map((layer) => `${layer} ${refusals[layer]}`).join(", ");
  return `layers on (refusals): ${kept}; off: ${off.length === 0 ? "none" : off.join(", ")}`;
}

function outcomes(counts: OutcomeCounts): string {
  return `ok ${counts.ok}, fail ${counts.fail}, info ${counts.info}`;
}

function counts(byKind: Partial<Record<string, number>>): string {
  return Object.entries(byKind)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(", ");
}

function ms(value: number | null): string {
  return value === null ? "-" : `${value} ms`;
}

function percent(ratio: number | null): string {
  return ratio === null ? "-" : `${(ratio * 100).toFixed(1)}%`;
}
