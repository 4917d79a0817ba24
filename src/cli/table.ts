import { terminalSafe } from "../contract/terminal-safe.ts";

/**
 * Plain-text output for humans: aligned tables without a dependency, relative times and a few
 * cell formats. Nothing here knows about Pinboard's answers.
 */

export type Align = "left" | "right";

export interface Column<Row> {
  header: string;
  cell: (row: Row) => string;
  align?: Align;
}

/** Shown for an absent value. */
export const NONE = "-";

/**
 * Renders rows under upper-case headers, columns separated by two spaces, numbers right-aligned
 * where the column says so. Cell text is terminal-safe: its controls (newlines included, which
 * would break the layout) show as `\uXXXX` escapes. Trailing spaces are trimmed.
 */
export function renderTable<Row>(columns: Array<Column<Row>>, rows: readonly Row[]): string {
  const cells = rows.map((row) => columns.map((c) => terminalSafe(c.cell(row))));
  const widths = columns.map((c, i) => Math.max(width(c.header), ...cells.map((r) => width(r[i]!))));
  const line = (values: string[]) =>
    values
      .map((value, i) => (columns[i]!.align === "right" ? padStart(value, widths[i]!) : padEnd(value, widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join("\n");
}

/** Key–value lines with the keys aligned, for single objects (health, sweep reports). */
export function renderPairs(pairs: Array<[string, string]>): string {
  const keyWidth = Math.max(0, ...pairs.map(([k]) => width(k)));
  return pairs.map(([k, v]) => `${padEnd(`${k}:`, keyWidth + 1)}  ${terminalSafe(v)}`.trimEnd()).join("\n");
}

/**
 * A moment relative to now in whole seconds: "in 14s" / "12s ago" by default, or the bare
 * seconds ("14s", "-3s") when `bare` (an EXPIRES-IN column says the direction already).
 */
export function relativeSeconds(at: number, now: number, bare = false): string {
  const seconds = Math.round((at - now) / 1000);
  if (bare) return `${seconds}s`;
  if (seconds === 0) return "now";
  return seconds > 0 ? `in ${seconds}s` : `${-seconds}s ago`;
}

/** A duration in whole seconds ("3600s"); the CLI speaks seconds like the API's deadlines. */
export function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/** Bytes in binary units with one decimal ("48.2 MiB"). */
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

export function yesNo(value: boolean | undefined): string {
  return value === undefined ? NONE : value ? "yes" : "no";
}

/** Display width: code points, so a multi-byte name does not shift its column. */
function width(value: string): number {
  return [...value].length;
}

function padEnd(value: string, to: number): string {
  return value + " ".repeat(Math.max(0, to - width(value)));
}

function padStart(value: string, to: number): string {
  return " ".repeat(Math.max(0, to - width(value))) + value;
}
