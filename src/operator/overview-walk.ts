import type { AppDeps } from "../deps/app-deps.ts";
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
 *
 * An id prefix goes to Redis as HSCAN's MATCH, so only matching rows cross the wire. Redis still
 * looks at COUNT fields per page, so the budget counts both: the fields scanned (the COUNT hints)
 * and the rows fetched. Since non-matching rows cost no transfer, a prefix walk reads ahead
 * further, scans with larger pages, sized by how many rows matched so far (see `pageCount`), and
 * keeps fetching the pages of the spaces ahead while the head is consumed.
 */
export const OVERVIEW_BUDGET = {
  /** Round trips one request waits on for rows (on Workers: subrequests, of the Free plan's 50). */
  roundTrips: 16,
  /**
   * Rows fetched: no round trip starts past this many (one round fetches about headScanCount +
   * window × scanCount more at most; with a prefix, matchWindow instead of window).
   */
  rows: 20_000,
  /**
   * Fields Redis looks at, the sum of the COUNT hints: no round trip starts past this many. About
   * 0.5 µs of Redis time each with MATCH (docs/operations.md); binds a prefix walk only.
   */
  scanned: 1_000_000,
  /** Spaces whose HSCAN pages are fetched ahead, at most, in one round trip. */
  window: 32,
  /** The same for a prefix walk. */
  matchWindow: 64,
  /** Buckets whose spaces one round trip lists (one SMEMBERS each). */
  bucketsPerRound: 32,
  /** HSCAN's COUNT (rows per page, roughly) for the space being consumed. */
  headScanCount: 4000,
  /** HSCAN's COUNT for the spaces read ahead of it. */
  scanCount: 250,
  /** A prefix walk's largest COUNT: about 2 ms of Redis time per page over a large hash. */
  matchScanCount: 5000,
  /** A prefix walk sizes its pages to fetch about this many matching rows per round trip. */
  roundRows: 12_000,
} as const;

/** A walk's budget: OVERVIEW_BUDGET's fields, any values (a test's smaller ones). */
export type WalkBudget = { readonly [K in keyof typeof OVERVIEW_BUDGET]: number };

/** Takes one row; true when it counts toward the limit. */
export type AcceptRow = (env: string, ns: string, id: string, raw: string) => boolean;

export interface WalkOptions {
  /** Only this namespace's spaces. */
  ns?: string;
  /** Where the previous request stopped. */
  from?: PageCursor;
  /** Only ids matching this HSCAN MATCH glob (an escaped prefix: src/redis/glob.ts). */
  match?: string;
  /** Rows to take at most (Infinity: the whole walk, budget permitting). */
  limit: number;
  /** OVERVIEW_BUDGET unless a test says otherwise. */
  budget?: WalkBudget;
}

interface Page {
  next: string;
  rows: Array<[string, string]>;
}

interface Target {
  bucket: number;
  space: string;
  env: string;
  ns: string;
  /** The HSCAN cursor of the first unconsumed page (pages[0], once fetched) and the rows of it already taken. */
  scan: string;
  skip: number;
  /** Fetched pages, in order from `scan`: one at most, but for a prefix walk (see `wantsPage`). */
  pages: Page[];
  /** Fields looked at (COUNT hints) and rows fetched in this space so far: its match rate. */
  scanned: number;
  fetched: number;
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
  private scanned = 0;
  private taken = 0;
  private readonly budget: WalkBudget;
  private readonly window: number;

  constructor(
    private readonly deps: OverviewWalkDeps,
    private readonly options: WalkOptions,
    private readonly accept: AcceptRow,
  ) {
    this.nextBucket = options.from?.bucket ?? 0;
    this.budget = options.budget ?? OVERVIEW_BUDGET;
    this.window = options.match === undefined ? this.budget.window : this.budget.matchWindow;
  }

  async run(): Promise<PageCursor | undefined> {
    for (;;) {
      const stopped = this.consume();
      if (stopped) return stopped.cursor;
      if (this.targets.length === 0 && this.nextBucket >= this.deps.keys.shards) return undefined;
      if (this.spent()) return this.position();
      await this.round();
    }
  }

  private spent(): boolean {
    const budget = this.budget;
    return this.rounds >= budget.roundTrips || this.fetched >= budget.rows || this.scanned >= budget.scanned;
  }

  /** Takes the fetched pages at the head of the walk, in order; stops at the limit. */
  private consume(): { cursor: PageCursor } | null {
    for (let t = this.targets[0]; t?.pages[0]; t = this.targets[0]) {
      const { next, rows } = t.pages[0];
      for (let i = t.skip; i < rows.length; i++) {
        if (!this.accept(t.env, t.ns, rows[i]![0], rows[i]![1])) continue;
        if (++this.taken === this.options.limit) return { cursor: after(t, i) };
      }
      t.pages.shift();
      t.scan = next;
      t.skip = 0;
      if (next === "0") this.targets.shift();
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
      this.targets.length < this.window &&
      listing.length < this.budget.bucketsPerRound &&
      this.nextBucket < keys.shards
    ) {
      listing.push(this.nextBucket++);
    }
    const fetching = this.wanting();
    const counts = fetching.map((t) => this.pageCount(t, fetching.length));
    fetching.forEach((t, i) => {
      t.scanned += counts[i]!;
      this.scanned += counts[i]!;
    });
    const { match } = this.options;
    const [lists] = await Promise.all([
      Promise.all(listing.map((bucket) => redis.smembers(keys.spaces(bucket)))),
      Promise.all(
        fetching.map(async (t, i) => {
          const from = t.pages.at(-1)?.next ?? t.scan;
          const [next, rows] = await redis.hscan(keys.placements(t.bucket, t.env, t.ns), from, counts[i]!, match);
          const page = { next, rows };
          t.pages.push(page);
          t.fetched += page.rows.length;
          this.fetched += page.rows.length;
        }),
      ),
    ]);
    for (const [i, bucket] of listing.entries()) this.addTargets(bucket, lists[i]!);
  }

  /**
   * The spaces of the window that get their next page this round. A space gets one when it has
   * none; in a prefix walk also while its last page was not its end, since its pages hold few
   * rows: the spaces ahead are scanned while the head is taken. But a space whose pages could only
   * matter past the limit waits: the rows fetched before it already make up what is left to take.
   */
  private wanting(): Target[] {
    const left = this.options.limit - this.taken;
    let ahead = 0;
    const out: Target[] = [];
    for (const t of this.targets.slice(0, this.window)) {
      if (ahead >= left) break;
      const last = t.pages.at(-1);
      if (last === undefined || (this.options.match !== undefined && last.next !== "0")) out.push(t);
      for (const page of t.pages) ahead += page.rows.length;
      ahead -= t.pages.length > 0 ? t.skip : 0;
    }
    return out;
  }

  /**
   * HSCAN's COUNT for a space's next page. Without a prefix: the head's large page, small ones
   * ahead. With one: as large as keeps a round near `roundRows` matching rows at the rate rows of
   * this space matched so far (of the whole walk before its first page; all of them before
   * anything was scanned), between those sizes and `matchScanCount`. So a rare prefix scans in
   * large pages, a common one in the usual ones, and a space that matches much gets small pages
   * whatever the others did.
   */
  private pageCount(t: Target, fetching: number): number {
    const { budget } = this;
    // A page resumed past `skip` rows must start with those rows: from the same cursor, a page at
    // least as large as any this walk asks for does.
    if (t.skip > 0 && t.pages.length === 0)
      return this.options.match === undefined ? budget.headScanCount : budget.matchScanCount;
    const base = t === this.targets[0] ? budget.headScanCount : budget.scanCount;
    if (this.options.match === undefined) return base;
    const matchRate = t.scanned > 0 ? (t.fetched + 1) / (t.scanned + 1) : (this.fetched + 1) / (this.scanned + 1);
    const fit = Math.floor(budget.roundRows / (matchRate * fetching));
    return Math.min(budget.matchScanCount, Math.max(base, fit));
  }

  /** A bucket's spaces (of the ns filter), sorted, from the cursor's space on when it is the cursor's bucket. */
  private addTargets(bucket: number, spaces: string[]): void {
    const { ns, from } = this.options;
    const resuming = from !== undefined && from.bucket === bucket;
    for (const space of spaces.filter((s) => ns === undefined || s.split("\n")[1] === ns).sort()) {
      if (resuming && space < from.space) continue;
      const [env = "", spaceNs = ""] = space.split("\n");
      const at = resuming && space === from.space ? { scan: from.scan, skip: from.skip } : { scan: "0", skip: 0 };
      this.targets.push({ bucket, space, env, ns: spaceNs, ...at, pages: [], scanned: 0, fetched: 0 });
    }
  }
}

/** The cursor after row `i` of the head space's first page. */
function after(t: Target, i: number): PageCursor {
  const { next, rows } = t.pages[0]!;
  if (i + 1 < rows.length) return { bucket: t.bucket, space: t.space, scan: t.scan, skip: i + 1 };
  if (next !== "0") return { bucket: t.bucket, space: t.space, scan: next, skip: 0 };
  // The spaces after this one in sort order, then the next buckets.
  return { bucket: t.bucket, space: `${t.space}\u0000`, scan: "0", skip: 0 };
}
