import { z } from "zod";

/**
 * Where an edge-timed pause ends: at the worker's own view of its lease (the TTL × 0.95 after its
 * last renewal was sent: the lease guard's 5 % margin, src/pinned/lease.ts), give or take up to
 * half a second, so some pauses end just before the worker would stop serving and some just after,
 * while Pinboard's own lease (TTL after it handled the renewal) is about to run out or just has.
 */

/** The worker's view of its lease ends this fraction of the TTL after the renewal was sent. */
export const LEASE_VIEW_FRACTION = 0.95;
/** How far from that edge a pause may end, either way (ms). */
export const EDGE_SPREAD_MS = 500;

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
  /** −EDGE_SPREAD_MS to +EDGE_SPREAD_MS: negative ends before the edge. */
  offsetMs: number;
}

/** A resume time uniformly within ±EDGE_SPREAD_MS of the lease view's end. */
export function chooseEdgeTiming(renewal: Renewal, random: () => number): EdgeTiming {
  const edge = leaseViewEnd(renewal);
  const offsetMs = Math.round((random() * 2 - 1) * EDGE_SPREAD_MS);
  return { edge, resumeAt: edge + offsetMs, offsetMs };
}
