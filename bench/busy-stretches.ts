/**
 * The long tasks in a V8 .cpuprofile: stretches of consecutive samples in which the thread was
 * never idle. Under a paced load a request that arrives during such a stretch waits for its end,
 * so the longest stretches are what a paced p99 sees of the process itself. Each stretch is named
 * by where its time went: garbage collection, and the Pinboard function (or else the
 * dependency) that held the most of it.
 */
import { readFileSync } from "node:fs";
import { areaOf, type CpuProfile } from "./profile-summary.ts";

export interface BusyStretch {
  /** From the profile's start. */
  atMs: number;
  ms: number;
  gcMs: number;
  /** The stretch's time by area (profile-summary's areaOf), largest first. */
  areas: Array<{ area: string; ms: number }>;
}

export interface BusyReport {
  file: string;
  totalMs: number;
  busyMs: number;
  /** Stretches of at least `minMs`, longest first. */
  stretches: BusyStretch[];
  /** How many stretches of each length: ≥1, ≥2, ≥5, ≥10, ≥20 ms. */
  histogram: Record<string, number>;
}

const BUCKETS = [1, 2, 5, 10, 20];

export function busyStretches(file: string, minMs = 5, top = 12): BusyReport {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const area = new Map(profile.nodes.map((n) => [n.id, areaOf(n.callFrame.url, n.callFrame.functionName)]));
  const samples = profile.samples ?? [];
  const deltas = profile.timeDeltas ?? [];
  const stretches: BusyStretch[] = [];
  const histogram = Object.fromEntries(BUCKETS.map((b) => [`>=${b}ms`, 0]));
  let at = 0;
  let busy = 0;
  let current: { atUs: number; us: number; byArea: Map<string, number> } | undefined;
  const close = () => {
    if (!current) return;
    const ms = current.us / 1000;
    for (const b of BUCKETS) if (ms >= b) histogram[`>=${b}ms`]!++;
    if (ms >= minMs) {
      const areas = [...current.byArea]
        .sort((a, b) => b[1] - a[1])
        .map(([name, us]) => ({ area: name, ms: us / 1000 }));
      stretches.push({
        atMs: current.atUs / 1000,
        ms,
        gcMs: (current.byArea.get("(garbage collector)") ?? 0) / 1000,
        areas,
      });
    }
    current = undefined;
  };
  for (let i = 0; i < samples.length; i++) {
    // A sample's time runs until the next one.
    const dt = Math.max(0, deltas[i + 1] ?? 0);
    const where = area.get(samples[i]!) ?? "(unknown)";
    if (where === "(idle)") close();
    else {
      current ??= { atUs: at, us: 0, byArea: new Map() };
      current.us += dt;
      current.byArea.set(where, (current.byArea.get(where) ?? 0) + dt);
      busy += dt;
    }
    at += dt;
  }
  close();
  stretches.sort((a, b) => b.ms - a.ms);
  return { file, totalMs: at / 1000, busyMs: busy / 1000, stretches: stretches.slice(0, top), histogram };
}

export function formatBusy(name: string, r: BusyReport): string {
  const counts = Object.entries(r.histogram)
    .map(([k, v]) => `${k} ${v}`)
    .join(", ");
  const lines = [
    `Long tasks of Pinboard during ${name}: busy ${r.busyMs.toFixed(0)} of ${r.totalMs.toFixed(0)} ms (${((100 * r.busyMs) / r.totalMs).toFixed(0)} %); stretches ${counts}`,
  ];
  for (const s of r.stretches) {
    const parts = s.areas
      .slice(0, 4)
      .map((a) => `${a.area} ${a.ms.toFixed(1)}`)
      .join(", ");
    lines.push(`  ${s.ms.toFixed(1).padStart(6)} ms at ${(s.atMs / 1000).toFixed(2)} s: ${parts}`);
  }
  return lines.join("\n");
}
