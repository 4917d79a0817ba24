import type { PinboardClaim } from "../auth/claims.ts";

/**
 * How long GET /registry/spread keeps an answer: 10 s, or 20 times what counting it took when
 * that is longer, so that however many placements there are, the spread count of one scope keeps Redis
 * busy for at most about a twentieth of the time on each node (each isolate on Workers).
 */
export const SPREAD_CACHE = {
  ttlMs: 10_000,
  costFactor: 20,
  /** Scopes kept at most; the oldest answer goes first. */
  entries: 64,
} as const;

/**
 * The answers of GET /registry/spread, kept per claim scope (the claim's namespaces, hostnames
 * and envs: what decides which rows and workers a credential sees), in this node's memory. Only
 * finished answers are kept, never a count in flight: on Workers a promise must not outlive the
 * request whose I/O settles it.
 */
export class SpreadCache<T> {
  private readonly answers = new Map<string, { until: number; value: T }>();

  constructor(private readonly now: () => number) {}

  async get(claim: PinboardClaim, count: () => Promise<T>): Promise<T> {
    const key = scopeKey(claim);
    const started = this.now();
    const kept = this.answers.get(key);
    if (kept && kept.until > started) return kept.value;
    const value = await count();
    const done = this.now();
    this.answers.delete(key);
    if (this.answers.size >= SPREAD_CACHE.entries) this.answers.delete(this.answers.keys().next().value!);
    this.answers.set(key, {
      until: done + Math.max(SPREAD_CACHE.ttlMs, (done - started) * SPREAD_CACHE.costFactor),
      value,
    });
    return value;
  }
}

/** What of a claim decides what the spread shows: two claims alike in these share answers. */
function scopeKey(claim: PinboardClaim): string {
  const sorted = (list: readonly string[] | undefined) => (list ? [...list].sort() : null);
  return JSON.stringify([sorted(claim.namespaces), sorted(claim.hostnames), sorted(claim.envs)]);
}
