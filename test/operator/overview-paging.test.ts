import { describe, expect, it } from "vitest";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import type { ChallengeServer } from "../support/challenge-server.ts";
import { changedKeys, keyspaceDigest } from "../support/keyspace.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { registerBody, registerOk } from "../support/registration.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * GET /registry/overview?limit=…&cursor=…, the paging extension the console uses: pages of at
 * most `limit` entries whose walk sees every live placement exactly once when nothing changes
 * meanwhile, the filters applied inside the walk, and 400s for a bad limit or cursor that change
 * nothing. Without `limit` the answer is the protocol's, with no cursor.
 */

let t: TestRedis, pb: TestPinboard, worker: ChallengeServer, token: string;
useRegistryFixture({}, (f) => ({ t, pb, worker, token } = f));

const keys = new Keys("pinboard:", 16);
const ROWS = 1234;

interface Page {
  namespaces: Array<{ namespace: string; entries: Array<{ id: string; tag?: string; alarm?: number }> }>;
  cursor?: string;
}

/** One overview request: its status and its page (or, refused, its `{error}` body). */
async function overview(query: string, op: string): Promise<{ status: number; body: Page }> {
  const res = await pb.call("GET", `/registry/overview${query}`, { token: op });
  return { status: res.status, body: (await res.json()) as Page };
}

/** Every page of a walk with `limit`, from the first to the one without a cursor. */
async function walk(query: string, limit: number, op: string): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | undefined;
  do {
    const { status, body } = await overview(
      `?${query}${query ? "&" : ""}limit=${limit}${cursor ? `&cursor=${cursor}` : ""}`,
      op,
    );
    expect(status).toBe(200);
    pages.push(body);
    cursor = body.cursor;
    expect(pages.length).toBeLessThan(200);
  } while (cursor !== undefined);
  return pages;
}

const ids = (pages: Page[]) => pages.flatMap((p) => p.namespaces.flatMap((n) => n.entries.map((e) => e.id)));

describe("GET /registry/overview with limit and cursor", () => {
  it("walks every live placement once, in pages of at most `limit`, with the filters inside the walk", async () => {
    const { sessionId } = await registerOk(pb, token, registerBody(worker, { namespaces: ["/paged", "/other"] }));
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < ROWS; i++) {
      const ns = i % 5 === 0 ? "/other" : "/paged";
      const id = `p-${String(i).padStart(5, "0")}`;
      const b = keys.bucketOf(id);
      writes.push(
        t.redis.client.hset(
          keys.placements(b, SINGLE_ENV, ns),
          id,
          [sessionId, "1", "", "", i % 3 === 0 ? "gold" : ""].join("\n"),
        ),
      );
      writes.push(t.redis.client.sadd(keys.spaces(b), `${SINGLE_ENV}\n${ns}`));
    }
    await Promise.all(writes);
    const op = await credential("pinboard:operator");

    const whole = await overview("", op);
    expect(whole.status).toBe(200);
    expect(whole.body.cursor).toBeUndefined();
    const all = ids([whole.body]).sort();
    expect(all).toHaveLength(ROWS);
    // The protocol's answer names no epoch; a page does.
    expect(whole.body.namespaces.flatMap((n) => n.entries).some((e) => "epoch" in e)).toBe(false);
    const first = (await overview("?limit=5", op)).body;
    expect(first.namespaces.flatMap((n) => n.entries).map((e) => (e as { epoch?: string }).epoch)).toEqual([
      "1",
      "1",
      "1",
      "1",
      "1",
    ]);
    // And the durable alarm the worker library's index lists for an entry.
    await t.redis.client.zadd("pinned:{pinned-index}:alarms", 1_900_000_000_000, "/paged/p-00001");
    const one = (await overview("?limit=1&prefix=p-00001", op)).body;
    expect(one.namespaces.flatMap((n) => n.entries)).toEqual([
      { id: "p-00001", sessionId, epoch: "1", alarm: 1_900_000_000_000 },
    ]);

    for (const limit of [7, 100, 1000]) {
      const pages = await walk("", limit, op);
      for (const page of pages) expect(ids([page]).length).toBeLessThanOrEqual(limit);
      expect(pages.slice(0, -1).every((p) => ids([p]).length === limit)).toBe(true);
      const walked = ids(pages);
      expect(walked.length).toBe(new Set(walked).size);
      expect(walked.sort()).toEqual(all);
    }

    const gold = ids(await walk("ns=/paged&tag=gold&prefix=p-0", 50, op)).sort();
    const expected = all.filter((id) => {
      const i = Number(id.slice(2));
      return i % 5 !== 0 && i % 3 === 0 && id.startsWith("p-0");
    });
    expect(gold).toEqual(expected);
  });

  it("refuses a bad limit or cursor with 400, changing nothing", async () => {
    const op = await credential("pinboard:operator");
    const before = await keyspaceDigest(t);
    for (const [query, error] of [
      ["?limit=0", "invalid limit"],
      ["?limit=1001", "invalid limit"],
      ["?limit=abc", "invalid limit"],
      ["?limit=1.5", "invalid limit"],
      ["?limit=10&cursor=!!", "invalid cursor"],
      ["?limit=10&cursor=WzEsMiwzXQ", "invalid cursor"],
      ["?cursor=WzEsMiwzXQ", "invalid cursor"],
    ] as const) {
      const { status, body } = await overview(query, op);
      expect({ query, status, body }).toEqual({ query, status: 400, body: { error } });
    }
    expect(changedKeys(before, await keyspaceDigest(t))).toEqual([]);
  });
});
