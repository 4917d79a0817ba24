/**
 * What Linux says about a process: CPU seconds (utime + stime from /proc/<pid>/stat), resident
 * memory (VmRSS, VmHWM from /proc/<pid>/status) and the process tree (for reaping, and for
 * fronts that run as several processes). Reads are synchronous and cheap; a process that is gone
 * reads as null.
 */
import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";

let ticks: number | undefined;

/** Clock ticks per second (CLK_TCK), 100 on every Linux this runs on; asked once. */
function clockTicks(): number {
  if (ticks !== undefined) return ticks;
  try {
    ticks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
  } catch {
    ticks = 100;
  }
  return ticks;
}

/** Fields of /proc/<pid>/stat after the command name (which may hold spaces and parentheses). */
function statFields(pid: number): string[] | null {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch {
    return null;
  }
  return text.slice(text.lastIndexOf(")") + 2).split(" ");
}

/** User + system CPU seconds the process has used so far. */
export function cpuSeconds(pid: number): number | null {
  const f = statFields(pid);
  if (!f) return null;
  // After "pid (comm) ", field 3 (state) is index 0; utime is field 14, stime field 15.
  return (Number(f[11]) + Number(f[12])) / clockTicks();
}

function statusKb(pid: number, field: "VmRSS" | "VmHWM"): number | null {
  try {
    const text = readFileSync(`/proc/${pid}/status`, "utf8");
    const m = new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text);
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** Resident set size in bytes. */
export function rssBytes(pid: number): number | null {
  const kb = statusKb(pid, "VmRSS");
  return kb === null ? null : kb * 1024;
}

/** Peak resident set size (high-water mark) in bytes. */
export function peakRssBytes(pid: number): number | null {
  const kb = statusKb(pid, "VmHWM");
  return kb === null ? null : kb * 1024;
}

/** Every process below `root` in the process tree (children, grandchildren, …). */
export function descendantsOf(root: number): number[] {
  const parentOf = new Map<number, number[]>();
  let entries: string[];
  try {
    entries = readdirSync("/proc");
  } catch {
    return [];
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const f = statFields(Number(entry));
    if (!f) continue;
    const ppid = Number(f[1]);
    const list = parentOf.get(ppid) ?? [];
    list.push(Number(entry));
    parentOf.set(ppid, list);
  }
  const out: number[] = [];
  const queue = [root];
  while (queue.length) {
    for (const child of parentOf.get(queue.shift()!) ?? []) {
      out.push(child);
      queue.push(child);
    }
  }
  return out;
}

/** The first descendant of `root` whose command name is `comm` (e.g. "workerd"), other than `except`. */
export function findDescendant(root: number, comm: string, except: readonly number[] = []): number | undefined {
  for (const pid of descendantsOf(root)) {
    if (except.includes(pid)) continue;
    try {
      if (readFileSync(`/proc/${pid}/comm`, "utf8").trim() === comm) return pid;
    } catch {
      // gone
    }
  }
  return undefined;
}

/** A process alone, or with everything below it (nginx's workers, Pinboard's processes). */
export type Watched = number | { tree: number } | undefined;

const members = (w: Watched): number[] =>
  w === undefined ? [] : typeof w === "number" ? [w] : [w.tree, ...descendantsOf(w.tree)];

function sum(values: Array<number | null>): number | null {
  return values.length === 0 || values.some((v) => v === null) ? null : values.reduce((a: number, b) => a + b!, 0);
}

/** CPU seconds used so far by a process or, for a tree, by it and everything below it now. */
export function watchedCpuSeconds(w: Watched): number | null {
  return sum(members(w).map(cpuSeconds));
}

/** Resident bytes of a process or of a whole tree (the sum). */
export function watchedRssBytes(w: Watched): number | null {
  return sum(members(w).map(rssBytes));
}

/** Peak resident bytes of a process or, for a tree, the sum of each member's peak. */
export function watchedPeakRssBytes(w: Watched): number | null {
  return sum(members(w).map(peakRssBytes));
}

/** CPU seconds of a set of processes (or trees) between construction and `delta()`. */
export class CpuWindow {
  private readonly before = new Map<string, number>();

  constructor(private readonly watched: Record<string, Watched>) {
    for (const [name, w] of Object.entries(watched)) {
      const s = watchedCpuSeconds(w);
      if (s !== null) this.before.set(name, s);
    }
  }

  /** CPU seconds used by each named process since construction. */
  delta(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, w] of Object.entries(this.watched)) {
      const start = this.before.get(name);
      const now = watchedCpuSeconds(w);
      if (start !== undefined && now !== null) out[name] = now - start;
    }
    return out;
  }
}
