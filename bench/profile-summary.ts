/**
 * Summarises a V8 .cpuprofile (what node --cpu-prof and the inspector's Profiler.stop produce):
 * where the sampled time went, by area (Pinboard's own files, each dependency, Node internals,
 * GC, idle) and by function, self and inclusive. Inclusive time counts a function once per
 * sample even when it recurses.
 */
import { readFileSync } from "node:fs";
import type { BusyReport } from "./busy-stretches.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

export interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples?: number[];
  timeDeltas?: number[];
}

export interface ProfileSummary {
  file: string;
  /** For a paced window: the stretches in which the thread was never idle (busy-stretches.ts). */
  longTasks?: BusyReport;
  totalMs: number;
  areas: Array<{ area: string; ms: number; share: number }>;
  selfTop: Array<{ fn: string; ms: number; share: number }>;
  inclusiveTop: Array<{ fn: string; ms: number; share: number }>;
}

/** Where a frame's code lives: "src/data-plane/proxy.ts", "hono", "node:internal", "(gc)", … */
export function areaOf(url: string, name: string): string {
  if (!url) return name.startsWith("(") ? name : "(native)";
  const nm = url.lastIndexOf("node_modules/");
  if (nm >= 0) {
    const rest = url.slice(nm + "node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  // node:internal/deps/undici/undici (the global fetch), node:internal/webstreams/…, node:_http_server
  if (url.startsWith("node:"))
    return url
      .split("/")
      .slice(0, url.includes("/deps/") ? 3 : 2)
      .join("/");
  if (url.startsWith("wasm://")) return "wasm (undici's llhttp)";
  const src = url.indexOf("/src/");
  if (src >= 0) return url.slice(src + 1);
  const bench = url.indexOf("/bench/");
  if (bench >= 0) return url.slice(bench + 1);
  return url;
}

function label(node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame;
  // Frames of code that tsx compiled report line 0: only name the file there.
  const where = url ? `${areaOf(url, functionName)}${lineNumber > 0 ? `:${lineNumber + 1}` : ""}` : "";
  return `${functionName || "(anonymous)"}${where ? ` ${where}` : ""}`;
}

export function summariseProfile(file: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

  // Sample time per node from the sample stream (more exact than hitCount × mean interval).
  const selfUs = new Map<number, number>();
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  for (let i = 0; i < samples.length; i++) {
    const dt = deltas[i + 1] ?? deltas[i] ?? 0;
    selfUs.set(samples[i]!, (selfUs.get(samples[i]!) ?? 0) + Math.max(0, dt));
  }
  let total = 0;
  for (const us of selfUs.values()) total += us;

  const areas = new Map<string, number>();
  const selfFn = new Map<string, number>();
  const inclFn = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    const area = areaOf(node.callFrame.url, node.callFrame.functionName);
    areas.set(area, (areas.get(area) ?? 0) + us);
    selfFn.set(label(node), (selfFn.get(label(node)) ?? 0) + us);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const n = byId.get(at)!;
      if (n.callFrame.functionName === "(root)") break;
      const l = label(n);
      if (seen.has(l)) continue;
      seen.add(l);
      inclFn.set(l, (inclFn.get(l) ?? 0) + us);
    }
  }

  const rank = <K extends string>(m: Map<string, number>, key: K, n: number) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(
        ([name, us]) =>
          ({ [key]: name, ms: us / 1000, share: total ? us / total : 0 }) as { [P in K]: string } & {
            ms: number;
            share: number;
          },
      );

  return {
    file,
    totalMs: total / 1000,
    areas: rank(areas, "area", 14),
    selfTop: rank(selfFn, "fn", top),
    // Only frames of Pinboard's own code: what the request path spends, callees included.
    inclusiveTop: rank(new Map([...inclFn].filter(([l]) => / src\//.test(l))), "fn", top),
  };
}

export function formatSummary(name: string, s: ProfileSummary): string {
  const pct = (x: number) => `${(x * 100).toFixed(1).padStart(5)}%`;
  const lines = [
    `CPU profile of Pinboard during ${name}: ${s.totalMs.toFixed(0)} ms sampled (${s.file})`,
    "  by area (self time):",
  ];
  for (const a of s.areas) lines.push(`    ${pct(a.share)}  ${a.area}`);
  lines.push("  top functions (self time):");
  for (const f of s.selfTop) lines.push(`    ${pct(f.share)}  ${f.fn}`);
  lines.push("  Pinboard functions (inclusive time):");
  for (const f of s.inclusiveTop) lines.push(`    ${pct(f.share)}  ${f.fn}`);
  return lines.join("\n");
}
