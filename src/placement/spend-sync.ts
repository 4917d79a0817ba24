import type { AppDeps } from "../deps/app-deps.ts";
import type { RedisPort, RedisReply, ScriptCall } from "../redis/port.ts";
import {
  parseSpendSyncApply,
  parseSpendSyncRead,
  type SpendSyncReadRow,
  spendSyncApplyCall,
  spendSyncReadCall,
} from "./lua/index.ts";

/** What this module uses of the app's dependencies. */
export type SpendSyncDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "log" | "runtime" | "metrics">;

// Spend sync shows each bucket the new placements made in the others: design in docs/decisions.md, "How a spend sync runs".

export const FLUSH_INTERVAL_MS = 100;
/**
 * A sync costs two scripts per bucket, so with many buckets it runs less often: never more than
 * about 1000 scripts a second per app instance (16 shards: every 100 ms; 1024: every 2 s).
 */
export const flushIntervalMs = (shards: number): number => Math.max(FLUSH_INTERVAL_MS, shards * 2);
/** Most sessions one batch holds; a new session beyond it is dropped (counted in `dropped`). */
export const BATCH_CAP = 1024;
/** Times a session is synced again while some bucket's mirror lags its new headroom revision. */
const BEHIND_RETRIES = 3;

export interface SpendSyncStats {
  /** New placements recorded. */
  recorded: number;
  /** New placements of a session not in a full batch: not synced (counted, not queued). */
  dropped: number;
  /** Syncs run (retries included). */
  flushes: number;
  /** Script calls the syncs sent (2 × shards per sync). */
  scripts: number;
  /** Namespace list entries lowered. */
  lowered: number;
  /** Syncs that failed (a Redis error): logged, their sessions left to the next sync. */
  failed: number;
}

class SpendSync {
  /** sessionId → a bucket it placed in (whose mirror names its namespace lists). */
  private batch = new Map<string, number>();
  private pending: Promise<void> | undefined;
  private lastStart = Number.NEGATIVE_INFINITY;
  readonly stats: SpendSyncStats = { recorded: 0, dropped: 0, flushes: 0, scripts: 0, lowered: 0, failed: 0 };

  constructor(private readonly deps: SpendSyncDeps) {}

  /** Records a new placement of `sessionId` in `bucket`; answers the flush that will sync it. */
  record(sessionId: string, bucket: number): Promise<void> | undefined {
    if (!this.batch.has(sessionId)) {
      if (this.batch.size >= BATCH_CAP) {
        this.stats.dropped++;
        return this.pending;
      }
      this.batch.set(sessionId, bucket);
    }
    this.stats.recorded++;
    this.pending ??= this.schedule();
    return this.pending;
  }

  private schedule(): Promise<void> {
    const interval = flushIntervalMs(this.deps.config.shards);
    const wait = Math.min(interval, Math.max(0, this.lastStart + interval - this.deps.now()));
    return sleep(wait).then(async () => {
      this.lastStart = this.deps.now();
      const batch = this.batch;
      this.batch = new Map();
      this.pending = undefined;
      try {
        await this.sync(batch, 0);
      } catch (err) {
        this.stats.failed++;
        this.deps.log.warn("spend sync failed", {
          sessions: batch.size,
          error: err instanceof Error ? err.message : String(err),
        });
      }
    });
  }

  private async sync(batch: Map<string, number>, attempt: number): Promise<void> {
    const { keys, redis } = this.deps;
    const sids = [...batch.keys()];
    const buckets = keys.allBuckets();
    this.stats.flushes++;

    const readCall = (b: number) =>
      spendSyncReadCall(keys, {
        bucket: b,
        sessions: sids.map((sessionId) => ({ sessionId, withLists: batch.get(sessionId) === b })),
      });
    const reads = (await this.runMany(redis, buckets.map(readCall))).map(parseSpendSyncRead);
    const row = (b: number, s: number): SpendSyncReadRow | undefined => reads[b]?.[s];

    // Per session: the latest headroom revision any bucket counted under, each bucket's count
    // under it, and its namespace lists (indexes into `lists`).
    const lists: Array<{ hostname: string; ns: string }> = [];
    const listIndex = new Map<string, number>();
    const plans: Array<{ sid: string; rev: number; counts: number[]; total: number; lists: number[] }> = [];
    sids.forEach((sid, s) => {
      const spent = buckets.map((b) => parseSpent(row(b, s)?.spent));
      const rev = Math.max(...spent.map((x) => x?.rev ?? Number.NEGATIVE_INFINITY));
      if (!Number.isFinite(rev)) return;
      const counts = spent.map((x) => (x && x.rev === rev ? x.count : 0));
      const own = row(batch.get(sid)!, s);
      const hostname = own?.hostname;
      const namespaces = own?.namespaces ?? [];
      if (hostname === undefined || namespaces.length === 0) return;
      const mine = namespaces.map((ns) => {
        const list = `${hostname}\n${ns}`;
        let at = listIndex.get(list);
        if (at === undefined) listIndex.set(list, (at = lists.push({ hostname, ns }) - 1));
        return at;
      });
      plans.push({ sid, rev, counts, total: counts.reduce((a, c) => a + c, 0), lists: mine });
    });
    if (plans.length === 0) return;

    const applies = await this.runMany(
      redis,
      buckets.map((b) =>
        spendSyncApplyCall(keys, {
          bucket: b,
          lists,
          sessions: plans.map((p) => ({
            sessionId: p.sid,
            rev: p.rev,
            elsewhere: p.total - p.counts[b]!,
            lists: p.lists,
          })),
        }),
      ),
    );

    const behind = new Map<string, number>();
    for (const reply of applies) {
      const { lowered, behind: late } = parseSpendSyncApply(reply);
      this.stats.lowered += lowered;
      for (const sid of late) behind.set(sid, batch.get(sid)!);
    }
    // A heartbeat's fan-out that has not reached every bucket yet: sync those sessions again.
    if (behind.size > 0 && attempt < BEHIND_RETRIES) {
      await sleep(flushIntervalMs(this.deps.config.shards));
      await this.sync(behind, attempt + 1);
    }
  }

  private async runMany(redis: RedisPort, calls: ScriptCall[]): Promise<RedisReply[]> {
    this.stats.scripts += calls.length;
    const started = this.deps.now();
    const replies = await redis.runMany(calls);
    this.deps.metrics.script(calls[0]!.script.name, (this.deps.now() - started) / 1000);
    return replies;
  }
}

/** A stored `headroomRev \n count`; undefined when absent or malformed. */
function parseSpent(raw: string | undefined): { rev: number; count: number } | undefined {
  if (!raw) return undefined;
  const nl = raw.indexOf("\n");
  if (nl < 0) return undefined;
  const rev = Number(raw.slice(0, nl));
  const count = Number(raw.slice(nl + 1));
  return Number.isFinite(rev) && Number.isFinite(count) ? { rev, count } : undefined;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms) as unknown as { unref?: () => void };
    // Node: a pending sync never holds the process open. Workers: a number, nothing to do.
    if (typeof timer === "object" && timer !== null) timer.unref?.();
  });
}

/** One spend sync per Redis port: an app instance's (the entries build one port per app). */
const instances = new WeakMap<RedisPort, SpendSync>();

function spendSyncOf(deps: SpendSyncDeps): SpendSync {
  let sync = instances.get(deps.redis);
  if (!sync) instances.set(deps.redis, (sync = new SpendSync(deps)));
  return sync;
}

/**
 * Records a new placement (a fresh resolution) for the next spend sync. On a request-bound
 * runtime (Workers) the sync's promise goes to `defer` (waitUntil), since an isolate runs no
 * timers between requests; where promises run on (Node) its timer runs by itself.
 */
export function recordSpend(
  deps: SpendSyncDeps,
  sessionId: string,
  bucket: number,
  defer: (work: Promise<unknown>) => void,
): void {
  const flushed = spendSyncOf(deps).record(sessionId, bucket);
  if (flushed && deps.runtime.backgroundWork === "request-bound") defer(flushed);
}

/** The counters of this app instance's spend sync (tests, diagnostics). */
export function spendSyncStats(deps: SpendSyncDeps): Readonly<SpendSyncStats> {
  return spendSyncOf(deps).stats;
}
