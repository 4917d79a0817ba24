import { checkEnv, checkNamespace, type PinboardClaim } from "../auth/claims.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import type { WorkerRecord } from "../registry/record.ts";
import { liveRecords, visibleAmong } from "./fleet-view.ts";
import { rowScopeError } from "./scope.ts";
import { SpreadCache } from "./spread-cache.ts";
import { countSpread, listSpaces, type Space, type SpreadCount, type SpreadCountDeps } from "./spread-count.ts";

/** What this module uses of the app's dependencies. */
export type SpreadDeps = SpreadCountDeps & Pick<AppDeps, "config" | "now">;

export interface SpreadReply {
  /** Redis-clock ms at which the count began. */
  countedAt: number;
  /** Every space the claim covers was counted to its end (else the counts are lower bounds). */
  complete: boolean;
  /** Every visible live worker with the placements it owns, sorted as /registry/workers lists them. */
  workers: Array<{ sessionId: string; placements: number }>;
  /** Rows the claim may see without a live owner: dead owner, placeholder, passed wind-down fence. */
  unowned: number;
}

/**
 * GET /registry/spread (an extension, for the console): how the placements the claim covers
 * spread over the live workers it may see, counted inside Redis (spread-count.ts). Consoles
 * read it every few seconds, so each answer is kept per node (per isolate on Workers) and per
 * claim scope for a while (spread-cache.ts), in the reader this makes: one per app.
 */
export function spreadReader(deps: SpreadDeps): (claim: PinboardClaim) => Promise<SpreadReply> {
  const cache = new SpreadCache<SpreadReply>(deps.now);
  return (claim) => cache.get(claim, () => spread(deps, claim));
}

async function spread(deps: SpreadDeps, claim: PinboardClaim): Promise<SpreadReply> {
  const aware = deps.config.hostnameAware;
  const [{ now, records }, spaces] = await Promise.all([liveRecords(deps), listSpaces(deps)]);
  const workers = visibleAmong(records, claim, aware);
  const covered = spaces.filter((s) => coversSpace(claim, s, aware));
  const count = await countSpread(deps, covered);
  const live = new Map(records.map((r) => [r.sessionId, r]));
  const { owned, unowned } = judgeTallies(count, live, claim, aware);
  return {
    countedAt: now,
    complete: count.complete,
    workers: workers.map((w) => ({ sessionId: w.record.sessionId, placements: owned.get(w.record.sessionId) ?? 0 })),
    unowned,
  };
}

/**
 * A space whose namespace (and, hostname-aware, env) the claim covers: its rows may be visible.
 * (judgeTallies would judge the others' rows out: this spares counting them.)
 */
function coversSpace(claim: PinboardClaim, space: Space, aware: boolean): boolean {
  return checkNamespace(claim, space.ns) === null && (!aware || checkEnv(claim, space.env) === null);
}

/**
 * Each tally judged as the overview judges a row: placed rows of a live owner count for it when
 * the claim covers them on the owner's record (the answer lists only the workers the claim sees);
 * rows without a live owner (and rows not placed) count as unowned when the claim covers them on
 * their own hostname and env (rowScopeError). Rows of a live owner out of the claim count nowhere.
 */
function judgeTallies(
  count: SpreadCount,
  live: ReadonlyMap<string, WorkerRecord>,
  claim: PinboardClaim,
  aware: boolean,
): { owned: Map<string, number>; unowned: number } {
  const owned = new Map<string, number>();
  let unowned = 0;
  for (const t of count.tallies) {
    const owner = live.get(t.sessionId) ?? null;
    if (rowScopeError(claim, t.ns, t.env, { hostname: t.hostname }, owner, aware) !== null) continue;
    if (owner) owned.set(owner.sessionId, (owned.get(owner.sessionId) ?? 0) + t.rows);
    else unowned += t.rows;
  }
  return { owned, unowned };
}
