/** Helpers the checks share: grouping by key, epochs as numbers, and the real-time order sweep. */

export interface Interval {
  start: number;
  end: number;
}

export function groupByKey<T extends { key: string }>(items: readonly T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.key);
    if (group === undefined) groups.set(item.key, [item]);
    else group.push(item);
  }
  return groups;
}

/** An epoch's decimal string as a BigInt (epochs outgrow 2^53); undefined when absent or malformed. */
export function parseEpoch(epoch: string | undefined): bigint | undefined {
  if (epoch === undefined || !/^\d+$/.test(epoch)) return undefined;
  return BigInt(epoch);
}

/**
 * Visits every probe in start order with the best source (by `better`) among the sources that ended
 * strictly before the probe started: "the most advanced thing a client had been told before it
 * asked". Sorting once and sweeping keeps this O(n log n) per key instead of comparing all pairs.
 */
export function sweepAcknowledged<S extends Interval, P extends Interval>(
  sources: readonly S[],
  probes: readonly P[],
  better: (a: S, b: S) => boolean,
  visit: (probe: P, best: S | undefined) => void,
): void {
  const byEnd = [...sources].sort((a, b) => a.end - b.end);
  const byStart = [...probes].sort((a, b) => a.start - b.start);
  let best: S | undefined;
  let next = 0;
  for (const probe of byStart) {
    while (next < byEnd.length && byEnd[next]!.end < probe.start) {
      const done = byEnd[next++]!;
      if (best === undefined || better(done, best)) best = done;
    }
    visit(probe, best);
  }
}

/** The q-quantile of an ascending array by nearest rank; null when empty. */
export function quantile(sorted: readonly number[], q: number): number | null {
  if (sorted.length === 0) return null;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!;
}
