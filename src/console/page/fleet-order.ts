import type { PublicWorker } from "../../operator/replies.ts";

/** A worker as GET /registry/workers lists it (its reply schema, as a type only). */
export type Worker = PublicWorker;

/** What a worker's own GET /_pinned/stats said, through GET /registry/stats. */
export type WorkerStats =
  | { reachable: true; inflight: number | null; sockets: number | null; version: string | null }
  | { reachable: false };

/** A card's state, worst first: the order the fleet is sorted in, so trouble comes first. */
export const STATES = ["ejected", "degraded", "unreachable", "lease-short", "draining", "ok"] as const;
export type CardState = (typeof STATES)[number];

/** A lease with less than this left has missed heartbeats (they come every third of the lease). */
export const SHORT_LEASE_MS = 5000;

export function cardState(w: Worker, stats: WorkerStats | undefined, now: number): CardState {
  if (w.ejectedUntil !== undefined && w.ejectedUntil > now) return "ejected";
  if (w.degradedSince !== undefined) return "degraded";
  if (stats && !stats.reachable) return "unreachable";
  if (w.expiry - now < SHORT_LEASE_MS) return "lease-short";
  if (w.draining) return "draining";
  return "ok";
}

/** Trouble first, then by client id and session. */
export function sortFleet(workers: readonly Worker[], stats: ReadonlyMap<string, WorkerStats>, now: number): Worker[] {
  const rank = (w: Worker) => STATES.indexOf(cardState(w, stats.get(w.sessionId), now));
  return [...workers].sort(
    (a, b) => rank(a) - rank(b) || a.clientId.localeCompare(b.clientId) || a.sessionId.localeCompare(b.sessionId),
  );
}

/** The fleet's mean headroom, the scale each card's headroom bar is drawn against. */
export function meanHeadroom(workers: readonly Worker[]): number {
  if (workers.length === 0) return 0;
  return workers.reduce((sum, w) => sum + Math.max(0, w.headroom), 0) / workers.length;
}

/** Reads the fields a card shows from a worker's stats object, whatever else it holds. */
export function readStats(entry: { stats?: unknown; error?: string }): WorkerStats {
  const stats = entry.stats;
  if (entry.error !== undefined || stats === null || typeof stats !== "object") return { reachable: false };
  const s = stats as { namespaces?: unknown; version?: unknown };
  let inflight: number | null = null;
  let sockets: number | null = null;
  if (s.namespaces && typeof s.namespaces === "object") {
    for (const value of Object.values(s.namespaces as Record<string, unknown>)) {
      const v = (value ?? {}) as { inflight?: unknown; sockets?: unknown };
      if (typeof v.inflight === "number") inflight = (inflight ?? 0) + v.inflight;
      if (typeof v.sockets === "number") sockets = (sockets ?? 0) + v.sockets;
    }
  }
  return { reachable: true, inflight, sockets, version: typeof s.version === "string" ? s.version : null };
}
