/**
 * The request paths of one load, described once and produced as the `request` function of a wrk
 * Lua script (wrk.ts).
 *
 *   cycle: `${prefix}${i % count}${suffix}`, e.g. /hot/h-17/length over ids placed beforehand
 *   fresh: `${prefix}${tag}-${i}${suffix}` with `tag` random per window, so no id ever repeats
 */
import { randomBytes } from "node:crypto";

export type PathPlan =
  | { kind: "cycle"; prefix: string; count: number; suffix: string }
  | { kind: "fresh"; prefix: string; suffix: string };

/** The answer shape a path asks the bench's worker for (bench/fleet-main.ts). */
export type Framing = "length" | "chunked";

/** The path suffix that selects the worker's answer shape. */
export const suffixFor = (framing: Framing): string => `/${framing}`;

export const cycle = (prefix: string, count: number, framing: Framing): PathPlan => ({
  kind: "cycle",
  prefix,
  count,
  suffix: suffixFor(framing),
});
export const fresh = (prefix: string, framing: Framing): PathPlan => ({
  kind: "fresh",
  prefix,
  suffix: suffixFor(framing),
});

/** A tag for one window of fresh ids (8 hex characters). */
export const freshTag = (): string => randomBytes(4).toString("hex");

/** A Lua string literal (the bench's paths and header values are printable ASCII). */
export function luaString(value: string): string {
  if (!/^[\x20-\x7e]*$/.test(value)) throw new Error(`not printable ASCII: ${JSON.stringify(value)}`);
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** Lua defining `next_path()` for wrk: the plan's paths in order. */
export function luaPathFunction(plan: PathPlan, tag = freshTag()): string {
  const head = plan.kind === "cycle" ? plan.prefix : `${plan.prefix}${tag}-`;
  const index = plan.kind === "cycle" ? `i % ${plan.count}` : "i";
  return [
    "local i = 0",
    `local head, tail = ${luaString(head)}, ${luaString(plan.suffix)}`,
    "local function next_path()",
    `  local p = head .. string.format("%d", ${index}) .. tail`,
    "  i = i + 1",
    "  return p",
    "end",
  ].join("\n");
}
