import type { Fault } from "./history.ts";

/**
 * Which two faults the nemesis may hold at once ("overlap" in its kinds). Each kind has a scope:
 *  - process: the worker's process is killed or paused;
 *  - clock: the worker's clock steps or runs at another rate;
 *  - link: one of the worker's links (Pinboard → worker, worker → store) is cut or slowed;
 *  - global: the placement Redis, a Pinboard node, or an operator's drain or wind-down.
 * A pair has two different scopes, so no two faults fight over one thing (a kill and a pause of
 * one process, two modes of one proxy), and at most one global fault, so one Pinboard node and
 * the placement store are always whole enough for the recovery SLO to mean something. The
 * worker-scoped faults of a pair hit the same worker: a zombie whose store link is cut, a paused
 * worker whose clock is slow, a worker killed while a node's Redis link is down. A kill is not
 * paired with a clock fault: the restarted worker would read its clock file while it is rewritten.
 */

type FaultKind = Fault["kind"];
export type FaultScope = "process" | "clock" | "link" | "global";

export const FAULT_SCOPES: Record<FaultKind, FaultScope> = {
  "kill-worker": "process",
  "pause-worker": "process",
  "pause-worker-edge": "process",
  "clock-skew": "clock",
  "clock-rate": "clock",
  "clock-rate-past-margin": "clock",
  "proxy-pinboard-worker": "link",
  "proxy-worker-store": "link",
  "proxy-heal-inflight": "link",
  "proxy-pinboard-redis": "global",
  "redis-restart-empty": "global",
  "cluster-failover": "global",
  "kill-pinboard": "global",
  // Operator calls pick their own targets: paired like a global fault, with one worker's fault.
  "drain-worker": "global",
  "wind-down-keys": "global",
  "wind-down-namespace": "global",
};

export function compatible(a: FaultKind, b: FaultKind): boolean {
  const [sa, sb] = [FAULT_SCOPES[a], FAULT_SCOPES[b]];
  if (sa === sb) return false;
  const kinds = [a, b];
  return !(kinds.includes("kill-worker") && (sa === "clock" || sb === "clock"));
}

/** Every compatible pair among `kinds`, each once. */
export function compatiblePairs(kinds: readonly FaultKind[]): Array<[FaultKind, FaultKind]> {
  const distinct = [...new Set(kinds)];
  const pairs: Array<[FaultKind, FaultKind]> = [];
  for (let i = 0; i < distinct.length; i++)
    for (let j = i + 1; j < distinct.length; j++)
      if (compatible(distinct[i]!, distinct[j]!)) pairs.push([distinct[i]!, distinct[j]!]);
  return pairs;
}

/** A pair chosen uniformly among the compatible ones, or undefined when there is none. */
export function choosePair(kinds: readonly FaultKind[], random: () => number): [FaultKind, FaultKind] | undefined {
  const pairs = compatiblePairs(kinds);
  return pairs.length === 0 ? undefined : pairs[Math.floor(random() * pairs.length)];
}

export function workerScoped(kind: FaultKind): boolean {
  return FAULT_SCOPES[kind] !== "global";
}
