import { z } from "zod";

/**
 * Where an edge-timed pause ends. Half of them at the worker's own view of its lease (the TTL ×
 * 0.95 after its last renewal was sent: the lease guard's 5 % margin, src/pinned/lease.ts), give
 * or take up to half a second, so some end just before the worker would stop serving and some just
 * after, while Pinboard's own lease (TTL after it handled the renewal) is about to run out or just
 * has. The other half LATE_MIN_MS–LATE_MAX_MS past that view: Pinboard's lease is over and the
 * probes have placed the instances anew, so a guard that trusts its lease up to two seconds too
 * long would serve beside the new owners.
 */

/** The worker's view of its lease ends this fraction of the TTL after the renewal was sent. */
export const LEASE_VIEW_FRACTION = 0.95;
/** How far from that edge a pause may end, either way (ms). */
export const EDGE_SPREAD_MS = 500;
/** A late pause ends this long past the edge (ms). */
export const LATE_MIN_MS = 300;
export const LATE_MAX_MS = 1800;

/** One renewal as the chaos worker prints it (worker-clock.ts), in real milliseconds. */
export interface Renewal {
  sentAt: number;
  ttlMs: number;
  at: number;
}

const renewalSchema = z.object({ sentAt: z.number(), ttlMs: z.number().positive(), at: z.number() });

/** The renewal a worker's stdout line reports (`lease {…}`), if it is one. */
export function parseRenewalLine(line: string): Renewal | undefined {
  if (!line.startsWith("lease {")) return undefined;
  let json: unknown;
  try {
    json = JSON.parse(line.slice("lease ".length));
  } catch {
    return undefined;
  }
  const parsed = renewalSchema.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

/** When the worker's own view of the lease that `renewal` granted ends (real ms). */
export function leaseViewEnd(renewal: Renewal): number {
  return renewal.sentAt + Math.round(renewal.ttlMs * LEASE_VIEW_FRACTION);
}

export interface EdgeTiming {
  /** leaseViewEnd of the renewal. */
  edge: number;
  /** When the pause is to end: edge + offsetMs. */
  resumeAt: number;
  /** −EDGE_SPREAD_MS to +EDGE_SPREAD_MS, or LATE_MIN_MS to LATE_MAX_MS: negative ends before the edge. */
  offsetMs: number;
}

/** Half the time within ±EDGE_SPREAD_MS of the lease view's end, half LATE_MIN_MS–LATE_MAX_MS past it. */
export function chooseEdgeTiming(renewal: Renewal, random: () => number): EdgeTiming {
  const edge = leaseViewEnd(renewal);
  const late = random() >= 0.5;
  const offsetMs = late
    ? Math.round(LATE_MIN_MS + random() * (LATE_MAX_MS - LATE_MIN_MS))
    : Math.round((random() * 2 - 1) * EDGE_SPREAD_MS);
  return { edge, resumeAt: edge + offsetMs, offsetMs };
}
