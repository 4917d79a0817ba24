import type { AppDeps } from "../deps.ts";
import type { PageCursor } from "./overview-paging.ts";

/** What this module uses of the app's dependencies. */
export type OverviewWalkDeps = Pick<AppDeps, "redis" | "keys">;

/**
 * The walk of GET /registry/overview over the placement rows, bounded per request. Rows are
 * walked in one order (buckets ascending, each bucket's placement spaces sorted, each space by
 * HSCAN), so a cursor says where the next request goes on. Reads go out in round trips of
 * concurrent commands (one POST /pipeline on the REST adapter, one pipelined write on TCP): a round
 * lists the spaces of the next buckets and fetches the next HSCAN page of the spaces at the head
 * of the walk: a large one of the space being consumed, small ones of the spaces after it (read
 * ahead, as most spaces are small). The walk stops when `limit` rows were taken, or when its
 * budget is spent, and answers where to go on.
 */
export const OVERVIEW_BUDGET = {
  /** Round trips one request waits on for rows (on Workers: subrequests, of the Free plan's 50). */
  roundTrips: 16,
  /**
   * Rows fetched: no round trip starts past this many (one round fetches about headScanCount +
   * window × scanCount more at most).
   */
  rows: 20_000,
  /** Spaces whose HSCAN pages are fetched ahead, at most, in one round trip. */
  window: 32,
  /** Buckets whose spaces one round trip lists (one SMEMBERS each). */
  bucketsPerRound: 32,
  /** HSCAN's COUNT (rows per page, roughly) for the space being consumed. */
  headScanCount: 4000,
  /** HSCAN's COUNT for the spaces read ahead of it. */
  scanCount: 250,
} as const;

/** Takes one row; true when it counts toward the limit. */
export type AcceptRow = (env: string, ns: string, id: string, raw: string) => boolean;

export interface WalkOptions {
  /** Only this namespace's spaces. */
  ns?: string;
  /** Where the previous request stopped. */
  from?: PageCursor;
  /** Rows to take at most (Infinity: the whole walk, budget permitting). */
  limit: number;
}

interface Target {
  bucket: number;
  space: string;
  env: string;
  ns: string;
  /** The HSCAN cursor of the next page (of `page`, once fetched) and the rows of it already taken. */
  scan: string;
  skip: number;
  page?: { next: string; rows: Array<[string, string]> };
}

/** Walks the rows from `options.from`; answers the cursor to go on from, or undefined at the end. */
export function walkRows(
  deps: OverviewWalkDeps,
  options: WalkOptions,
  accept: AcceptRow,
): Promise<PageCursor | undefined> {
  return new Walk(deps, options, accept).run();
}

class Walk {
  private readonly targets: Target[] = [];
  private nextBucket: number;
  private rounds = 0;
  private fetched = 0;
  private taken = 0;

  constructor(
    private readonly deps: OverviewWalkDeps,
    private readonly options: WalkOptions,
    private readonly accept: AcceptRow,
  ) {
    this.nextBucket = options.from?.bucket ?? 0;
  }

  async run(): Promise<PageCursor | undefined> {
    for (;;) {
      const stopped = this.consume();
      if (stopped) return stopped.cursor;
      if (this.targets.length === 0 && this.nextBucket >= this.deps.keys.shards) return undefined;
      if (this.rounds >= OVERVIEW_BUDGET.roundTrips || this.fetched >= OVERVIEW_BUDGET.rows) return this.position();
      await this.round();
    }
  }

  /** Takes the fetched pages at the head of the walk, in order; stops at the limit. */
  private consume(): { cursor: PageCursor } | null {
    for (let t = this.targets[0]; t?.page; t = this.targets[0]) {
      const { next, rows } = t.page;
      for (let i = t.skip; i < rows.length; i++) {
        if (!this.accept(t.env, t.ns, rows[i]![0], rows[i]![1])) continue;
        if (++this.taken === this.options.limit) return { cursor: after(t, i) };
      }
      if (next === "0") {
        this.targets.shift();
      } else {
        t.scan = next;
        t.skip = 0;
        t.page = undefined;
      }
    }
    return null;
  }

  /** Where the walk stands between pages: the head space's next page, or the next unlisted bucket. */
  private position(): PageCursor {
    const head = this.targets[0];
    return head
      ? { bucket: head.bucket, space: head.space, scan: head.scan, skip: head.skip }
      : { bucket: this.nextBucket, space: "", scan: "0", skip: 0 };
  }

  /** One round trip: the spaces of the next buckets while few are known, the pages of the head spaces. */
  private async round(): Promise<void> {
    const { keys, redis } = this.deps;
    this.rounds++;
    const listing: number[] = [];
    while (
      this.targets.length < OVERVIEW_BUDGET.window &&
      listing.length < OVERVIEW_BUDGET.bucketsPerRound &&
      this.nextBucket < keys.shards
    ) {
      listing.push(this.nextBucket++);
    }
    const fetching = this.targets.slice(0, OVERVIEW_BUDGET.window).filter((t) => !t.page);
    const [lists] = await Promise.all([
      Promise.all(listing.map((bucket) => redis.smembers(keys.spaces(bucket)))),
      Promise.all(
        fetching.map(async (t) => {
          const count = t === this.targets[0] ? OVERVIEW_BUDGET.headScanCount : OVERVIEW_BUDGET.scanCount;
          const [next, rows] = await redis.hscan(keys.placements(t.bucket, t.env, t.ns), t.scan, count);
          t.page = { next, rows: Object.entries(rows) };
          this.fetched += t.page.rows.length;
        }),
      ),
    ]);
    for (const [i, bucket] of listing.entries()) this.addTargets(bucket, lists[i]!);
  }

  /** A bucket's spaces (of the ns filter), sorted, from the cursor's space on when it is the cursor's bucket. */
  private addTargets(bucket: number, spaces: string[]): void {
    const { ns, from } = this.options;
    const resuming = from !== undefined && from.bucket === bucket;
    for (const space of spaces.filter((s) => ns === undefined || s.split("\n")[1] === ns).sort()) {
      if (resuming && space < from.space) continue;
      const [env = "", spaceNs = ""] = space.split("\n");
      const at = resuming && space === from.space ? { scan: from.scan, skip: from.skip } : { scan: "0", skip: 0 };
      this.targets.push({ bucket, space, env, ns: spaceNs, ...at });
    }
  }
}

/** The cursor after row `i` of the head space's page. */
function after(t: Target, i: number): PageCursor {
  const { next, rows } = t.page!;
  if (i + 1 < rows.length) return { bucket: t.bucket, space: t.space, scan: t.scan, skip: i + 1 };
  if (next !== "0") return { bucket: t.bucket, space: t.space, scan: next, skip: 0 };
  // The spaces after this one in sort order, then the next buckets.
  return { bucket: t.bucket, space: `${t.space}\u0000`, scan: "0", skip: 0 };
}
