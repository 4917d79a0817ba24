import { describe, expect, it } from "vitest";
import type { PageCursor } from "../../src/operator/overview-paging.ts";
import { OVERVIEW_BUDGET, type WalkBudget, walkRows } from "../../src/operator/overview-walk.ts";
import { prefixPattern } from "../../src/redis/glob.ts";
import type { RedisPort } from "../../src/redis/port.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { expectRouteOk } from "../support/route-answers.ts";
import { putRows } from "../support/rows.ts";

/**
 * GET /registry/overview?prefix=…: the prefix goes to Redis as HSCAN MATCH (glob characters
 * escaped), so a search finds the rows across namespaces, pages with `limit` and `cursor`, and
 * only matching rows cross the wire; a rare prefix over a large space is answered in one request,
 * and a walk never starts a round trip past its budget of fields scanned.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

interface Entry {
  id: string;
  sessionId: string;
  epoch?: string;
}
interface Answer {
  workers: unknown[];
  bindings: unknown;
  namespaces: Array<{ hostname: null; env: null; namespace: string; sessionIds: string[]; entries: Entry[] }>;
  cursor?: string;
}

async function overview(query: string): Promise<Answer> {
  const res = await pb.call("GET", `/registry/overview?${query}`, { token: await credential("pinboard:operator") });
  const text = await res.text();
  expect({ status: res.status, text }).toMatchObject({ status: 200 });
  return expectRouteOk("GET /registry/overview", text) as Answer;
}

/** Every page from `query` on, following the cursors. */
async function pages(query: string): Promise<Answer[]> {
  const out: Answer[] = [];
  let cursor: string | undefined;
  do {
    out.push(await overview(`${query}${cursor ? `&cursor=${cursor}` : ""}`));
    cursor = out.at(-1)!.cursor;
    expect(out.length).toBeLessThan(100);
  } while (cursor !== undefined);
  return out;
}

const entriesOf = (answers: Answer[]) =>
  answers.flatMap((a) => a.namespaces.flatMap((g) => g.entries.map((e) => ({ namespace: g.namespace, ...e }))));
const byId = <T extends { namespace: string; id: string }>(list: T[]) =>
  [...list].sort((x, y) => `${x.namespace}/${x.id}`.localeCompare(`${y.namespace}/${y.id}`));

/** The walk's Redis port, counting what its HSCANs asked for (COUNT) and brought back (rows). */
function countingPort(redis: RedisPort) {
  const seen = { scans: 0, counted: 0, rows: 0, unmatched: 0 };
  const port = new Proxy(redis, {
    get(target, prop) {
      if (prop === "hscan")
        return async (key: string, cursor: string, count: number, match?: string) => {
          const page = await target.hscan(key, cursor, count, match);
          seen.scans++;
          seen.counted += count;
          seen.rows += Object.keys(page[1]).length;
          if (match === undefined) seen.unmatched++;
          return page;
        };
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { port, seen };
}

describe("GET /registry/overview with prefix", () => {
  it("finds the prefix's rows across namespaces, in pages with a cursor", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/p1", "/p2", "/p3"] }));
    const expected: Array<{ namespace: string; id: string; sessionId: string; epoch: string }> = [];
    for (const [n, ns] of ["/p1", "/p2", "/p3"].entries()) {
      const acme = Array.from({ length: 30 }, (_, i) => ({
        id: `acme-${n}-${i}`,
        row: { sessionId, epoch: `${n}${i}1` },
      }));
      const other = Array.from({ length: 2000 }, (_, i) => ({ id: `other-${i}`, row: { sessionId, epoch: "9" } }));
      await putRows(t, ns, [...acme, ...other]);
      for (const { id, row } of acme) expected.push({ namespace: ns, id, sessionId, epoch: row.epoch });
    }

    const paged = await pages("prefix=acme-&limit=20");
    expect(paged.length).toBeGreaterThanOrEqual(90 / 20);
    for (const page of paged) expect(entriesOf([page]).length).toBeLessThanOrEqual(20);
    expect(byId(entriesOf(paged))).toEqual(byId(expected));
    // The protocol's answer (no limit) finds the same rows, without epochs and in one answer.
    const whole = await overview("prefix=acme-");
    expect(whole.cursor).toBeUndefined();
    expect(byId(entriesOf([whole]))).toEqual(byId(expected.map(({ epoch: _, ...e }) => e)));
    expect(whole.namespaces.map((g) => [g.namespace, g.sessionIds])).toEqual([
      ["/p1", [sessionId]],
      ["/p2", [sessionId]],
      ["/p3", [sessionId]],
    ]);
  });

  it("matches glob characters in the prefix as themselves", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/glob"] }));
    const ids = ["g*1", "g*2", "gx1", "g[1]", "g1", "g?", "gz", "g\\1", "g]"];
    await putRows(
      t,
      "/glob",
      ids.map((id) => ({ id, row: { sessionId, epoch: "5" } })),
    );
    const found = async (prefix: string) =>
      entriesOf([await overview(`ns=/glob&limit=100&prefix=${encodeURIComponent(prefix)}`)]).sort((x, y) =>
        x.id.localeCompare(y.id),
      );
    const entry = (id: string) => ({ namespace: "/glob", id, sessionId, epoch: "5" });
    expect(await found("g*")).toEqual([entry("g*1"), entry("g*2")]);
    expect(await found("g[")).toEqual([entry("g[1]")]);
    expect(await found("g]")).toEqual([entry("g]")]);
    expect(await found("g?")).toEqual([entry("g?")]);
    expect(await found("g\\")).toEqual([entry("g\\1")]);
    expect((await found("g")).map((e) => e.id)).toEqual([...ids].sort((x, y) => x.localeCompare(y)));
  });

  it("brings only matching rows over the wire and answers a rare prefix over 60,000 rows in one request", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/wide"] }));
    const rows = Array.from({ length: 60_000 }, (_, i) => ({
      id: i % 5000 === 17 ? `needle-${i}` : `hay-${i}`,
      row: { sessionId, epoch: "1" },
    }));
    await putRows(t, "/wide", rows);
    const { port, seen } = countingPort(pb.deps.redis);
    const taken: string[] = [];
    const next = await walkRows(
      { redis: port, keys: pb.deps.keys },
      { ns: "/wide", match: prefixPattern("needle-"), limit: Infinity },
      (_env, _ns, id) => taken.push(id) > 0,
    );
    expect(next).toBeUndefined();
    expect(taken.sort()).toEqual(
      rows
        .filter((r) => r.id.startsWith("needle-"))
        .map((r) => r.id)
        .sort(),
    );
    expect(seen).toMatchObject({ rows: 12, unmatched: 0 });
    expect(seen.counted).toBeLessThanOrEqual(OVERVIEW_BUDGET.scanned);

    // Through the route: one answer, no cursor.
    const answer = await overview("ns=/wide&prefix=needle-&limit=1000");
    expect(answer.cursor).toBeUndefined();
    expect(entriesOf([answer]).length).toBe(12);
  });

  it("starts no round trip past its budget of fields scanned, and the cursors go on to every match", async () => {
    const budget: WalkBudget = { ...OVERVIEW_BUDGET, scanned: 12_000, matchWindow: 8, matchScanCount: 1000 };
    const needles = new Set<string>();
    let from: PageCursor | undefined;
    let walks = 0;
    do {
      const { port, seen } = countingPort(pb.deps.redis);
      const perRound = budget.matchWindow * budget.matchScanCount + budget.headScanCount;
      from = await walkRows(
        { redis: port, keys: pb.deps.keys },
        { ns: "/wide", match: prefixPattern("needle-"), limit: Infinity, budget, ...(from ? { from } : {}) },
        (_env, _ns, id) => {
          expect(needles.has(id)).toBe(false);
          needles.add(id);
          return true;
        },
      );
      expect(seen.counted).toBeLessThan(budget.scanned + perRound);
      walks++;
    } while (from !== undefined && walks < 100);
    expect(walks).toBeGreaterThanOrEqual(60_000 / (12_000 + 8 * 1000 + 4000));
    expect(needles.size).toBe(12);
  });

  it("with a limit, reads no further ahead than the rows it holds need", async () => {
    // Pages of 100 and room for many round trips: the head space needs about 20 pages.
    const budget: WalkBudget = {
      ...OVERVIEW_BUDGET,
      roundTrips: 100,
      headScanCount: 100,
      scanCount: 100,
      matchScanCount: 100,
    };
    const keys = pb.deps.keys;
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/ahead"] }));
    const hay = Array.from({ length: 32_000 }, (_, i) => `zz-${i}`);
    // No match in bucket 0's space (the head of the walk); about 20 in each other bucket's.
    const matches = Array.from({ length: 320 }, (_, i) => `m-${i}`).filter((id) => keys.bucketOf(id) !== 0);
    await putRows(
      t,
      "/ahead",
      [...hay, ...matches].map((id) => ({ id, row: { sessionId, epoch: "1" } })),
    );
    const { port, seen } = countingPort(pb.deps.redis);
    const taken: string[] = [];
    const next = await walkRows(
      { redis: port, keys },
      { ns: "/ahead", match: prefixPattern("m-"), limit: 5, budget },
      (_env, _ns, id) => taken.push(id) > 0,
    );
    expect(next).toBeDefined();
    expect(taken).toHaveLength(5);
    expect(taken.every((id) => id.startsWith("m-") && keys.bucketOf(id) !== 0)).toBe(true);
    // The head's own pages, the first page of each other space, and the next pages of the few
    // spaces right behind the head, not every page of all 16.
    expect(seen.scans).toBeGreaterThanOrEqual(2000 / 100);
    expect(seen.scans).toBeLessThan(2000 / 100 + 16 + 3 * 20);
  });
});
