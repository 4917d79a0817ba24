import { terminalSafe } from "../../contract/terminal-safe.ts";

/**
 * The outcome of one check: PASS, FAIL, or SKIP (a route the contract lets a worker leave out).
 * `got` and `expected` say, on a failure, what came back and what the contract says.
 */
export interface CheckResult {
  status: "pass" | "fail" | "skip";
  /** Which part of the contract: challenge, attestation, epoch, namespace, refusal, stats, wake, alarm, register. */
  group: string;
  /** What was checked, in a few words. */
  title: string;
  got?: string;
  expected?: string;
  /** Why a check was skipped, or a note on a pass. */
  note?: string;
}

export interface Report {
  ok: boolean;
  worker: { clientId?: string; advertiseUrl?: string; namespaces?: string[]; sessionId?: string };
  counts: { pass: number; fail: number; skip: number };
  checks: CheckResult[];
}

/** The most characters of a worker-controlled string shown on a line. */
export const SHOWN_CHARS = 160;

/** A worker-controlled string for one line: control codes escaped, cut to SHOWN_CHARS. */
export function shown(text: string): string {
  const safe = terminalSafe(text);
  return safe.length > SHOWN_CHARS ? `${safe.slice(0, SHOWN_CHARS)}… (${text.length} chars)` : safe;
}

export function buildReport(worker: Report["worker"], checks: CheckResult[]): Report {
  const count = (status: CheckResult["status"]) => checks.filter((c) => c.status === status).length;
  const counts = { pass: count("pass"), fail: count("fail"), skip: count("skip") };
  return { ok: counts.fail === 0, worker, counts, checks };
}

/** One line per check, then a summary line. */
export function renderReport(report: Report): string {
  const lines = report.checks.map(renderCheck);
  const { pass, fail, skip } = report.counts;
  lines.push(`${fail === 0 ? "ok" : "FAILED"}: ${pass} passed, ${fail} failed, ${skip} skipped`);
  return `${lines.join("\n")}\n`;
}

export function renderCheck(check: CheckResult): string {
  const head = `${check.status.toUpperCase()} ${check.group}: ${check.title}`;
  if (check.status === "fail") return `${head}: got ${check.got ?? "?"}; the contract says ${check.expected ?? "?"}`;
  return check.note === undefined ? head : `${head} (${check.note})`;
}
