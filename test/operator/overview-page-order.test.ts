import { describe, expect, it } from "vitest";
import type { PageCursor } from "../../src/operator/overview-paging.ts";
import { OVERVIEW_BUDGET, type WalkBudget, walkRows } from "../../src/operator/overview-walk.ts";
import { prefixPattern } from "../../src/redis/glob.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";
import { putRows } from "../support/rows.ts";

/**
 * A cursor names an HSCAN cursor and how many rows of that page were taken; the next request
 * fetches the page again, often with a larger COUNT, and skips those rows. That holds only while
 * the rows come in Redis' order: integer-like ids ("12345", valid ids) must not move first, as
 * they would through a JS object, and the page fetched again must be at least as large as the
 * one the rows were taken from. Walked in small pages, with and without a prefix, every id is
 * seen exactly once.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

async function walk(query: string): Promise<string[]> {
  const op = await credential("pinboard:operator");
  const ids: string[] = [];
  let cursor: string | undefined;
  let requests = 0;
  do {
    const res = await pb.call("GET", `/registry/overview?${query}${cursor ? `&cursor=${cursor}` : ""}`, { token: op });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { namespaces: Array<{ entries: Array<{ id: string }> }>; cursor?: string };
    ids.push(...body.namespaces.flatMap((g) => g.entries.map((e) => e.id)));
    cursor = body.cursor;
    expect(++requests).toBeLessThan(2000);
  } while (cursor !== undefined);
  return ids;
}

describe("paging over integer-like ids", () => {
  it("sees every id exactly once, with and without a prefix", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/num"] }));
    // Mixed with other ids so that pages hold both kinds; 750 a bucket, past the 512 fields of a
    // listpack hash (which HSCAN answers whole), so the pages read ahead (COUNT 250) are partial.
    const ids = Array.from({ length: 12_000 }, (_, i) => (i % 2 ? String(100_000 + i) : `n${i}`));
    await putRows(
      t,
      "/num",
      ids.map((id) => ({ id, row: { sessionId, epoch: "1" } })),
    );

    const all = await walk("ns=/num&limit=97");
    expect(all.length).toBe(ids.length);
    expect([...all].sort()).toEqual([...ids].sort());

    const ones = await walk("ns=/num&limit=41&prefix=1");
    expect(ones.length).toBe(6000);
    expect([...ones].sort()).toEqual(ids.filter((id) => id.startsWith("1")).sort());
  });

  it("sees every id once when a prefix walk's pages grow between requests", async () => {
    // Small pages: a prefix walk starts at COUNT 100 and grows its pages up to 400 as it learns
    // how many rows match, so a request resumes a page read with a larger COUNT than it starts with.
    const budget: WalkBudget = {
      ...OVERVIEW_BUDGET,
      headScanCount: 100,
      scanCount: 20,
      matchScanCount: 400,
      roundRows: 1600,
    };
    const seen = new Map<string, number>();
    let from: PageCursor | undefined;
    let requests = 0;
    do {
      from = await walkRows(
        pb.deps,
        { ns: "/num", match: prefixPattern("1"), limit: 137, budget, ...(from ? { from } : {}) },
        (_env, _ns, id) => seen.set(id, (seen.get(id) ?? 0) + 1) !== undefined,
      );
      expect(++requests).toBeLessThan(1000);
    } while (from !== undefined);
    expect([...seen.values()].filter((n) => n !== 1)).toEqual([]);
    expect(seen.size).toBe(6000);
  });
});
