import { describe, expect, it } from "vitest";
import { AUDIT_ENTRY_MAX_BYTES } from "../../src/audit/entry.ts";
import { recordAudit } from "../../src/audit/trail.ts";
import { AUDIT_SCAN_PER_REQUEST } from "../../src/operator/audit-read.ts";
import { AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING } from "../../src/operator/read-gate.ts";
import { readTrail, streamIds } from "../support/audit-trail.ts";
import { largestRegistration } from "../support/largest-audit-entry.ts";
import { credential, type TestPinboard } from "../support/pinboard-app.ts";
import type { TestRedis } from "../support/redis.ts";
import { useRegistryFixture } from "../support/registry-fixture.ts";

/**
 * GET /registry/audit does a bounded amount of Redis work per request, whatever the credential
 * may see: it looks at AUDIT_SCAN_PER_REQUEST entries at most and answers what it found with a
 * cursor to go on from. Work is counted by where the cursor stands (the entries looked at),
 * never by time.
 */

let t: TestRedis;
let pinboards: Record<"full" | "mixed", TestPinboard>;
useRegistryFixture({}, (f) => ({ t, pinboards } = f), {
  worker: false,
  pinboards: {
    full: { PINBOARD_PREFIX: "full:", PINBOARD_AUDIT_MAX_ENTRIES: "10000" },
    mixed: { PINBOARD_PREFIX: "mixed:" },
  },
});

/** A worker's namespaces, long enough that the entry is cut to its cap. */
const namespaces = (tag: string) => Array.from({ length: 256 }, (_, i) => `/${tag}-${i}`.padEnd(129, "x"));

/**
 * Appends `count` entries through the trail's own script: the first with the target `targetOf(0)`,
 * then copies of the stored entries (one XADD each, pipelined) for speed: a copy of an entry
 * the script wrote is an entry the script could have written.
 */
async function fill(pb: TestPinboard, count: number, targetOf: (i: number) => string[]): Promise<void> {
  const key = pb.deps.keys.audit;
  const templates = new Map<string, string[]>();
  for (let i = 0; i < count; i += 500) {
    const pipeline = t.redis.client.pipeline();
    for (let j = i; j < Math.min(count, i + 500); j++) {
      const names = targetOf(j);
      let fields = templates.get(names[0]!);
      if (!fields) {
        // As large as a real entry gets: a worker.registered with every field a worker chooses at its cut.
        await recordAudit(pb.deps, largestRegistration(names));
        const newest = (await t.redis.client.xrevrange(key, "+", "-", "COUNT", 1)) as Array<[string, string[]]>;
        fields = newest[0]![1];
        templates.set(names[0]!, fields);
        continue;
      }
      pipeline.xadd(key, "*", ...fields);
    }
    await pipeline.exec();
  }
}

describe("GET /registry/audit: the Redis work of one request", () => {
  it("a credential that sees nothing of a full trail of max-size entries gets a bounded page and a cursor to the end", async () => {
    const full = pinboards.full;
    await fill(full, 10_000, () => namespaces("other"));
    const ids = await streamIds(t, "full:{global}:audit");
    expect(ids).toHaveLength(10_000);
    const [newest] = (await t.redis.client.xrevrange("full:{global}:audit", "+", "-", "COUNT", 1)) as Array<
      [string, string[]]
    >;
    const bytes = newest![1].reduce((sum, s) => sum + Buffer.byteLength(s), 0);
    expect(bytes).toBeLessThanOrEqual(AUDIT_ENTRY_MAX_BYTES);
    // About the largest a real entry gets (the cap keeps a margin for the rest).
    expect(bytes).toBeGreaterThan(1400);

    const narrow = await credential("pinboard:operator", { namespaces: ["/mine"] });
    // Each request looks at AUDIT_SCAN_PER_REQUEST entries: its cursor is the last one it looked at.
    let page = await readTrail(full, narrow, "?limit=500");
    expect(page).toEqual({ entries: [], cursor: ids[AUDIT_SCAN_PER_REQUEST - 1] });
    let requests = 1;
    while (page.cursor !== undefined) {
      const at = ids.indexOf(page.cursor);
      page = await readTrail(full, narrow, `?limit=500&before=${page.cursor}`);
      requests++;
      expect(page.entries).toEqual([]);
      if (page.cursor !== undefined) expect(ids.indexOf(page.cursor)).toBe(at + AUDIT_SCAN_PER_REQUEST);
    }
    expect(requests).toBe(10_000 / AUDIT_SCAN_PER_REQUEST);

    // A credential that sees everything gets a full page from the same budget.
    const broad = await readTrail(full, await credential("pinboard:operator"), "?limit=500");
    expect(broad.entries.map((e) => e.id)).toEqual(ids.slice(0, 500));
    expect(broad.cursor).toBe(ids[499]);

    // Reads side by side wait their turn (AUDIT_READS_AT_ONCE run, AUDIT_READS_WAITING wait); past
    // that they are refused at once, so readers in a tight loop cannot stack budgets on Redis.
    const answers = await Promise.all(
      Array.from({ length: 300 }, () => full.call("GET", "/registry/audit?limit=500", { token: narrow })),
    );
    const refused = answers.filter((res) => res.status === 503);
    // Two run and 64 wait (literal: a changed constant must show here); the rest arrive while they do.
    expect([AUDIT_READS_AT_ONCE, AUDIT_READS_WAITING]).toEqual([2, 64]);
    expect(refused.length).toBeGreaterThan(0);
    expect(answers.length - refused.length).toBeGreaterThanOrEqual(66);
    for (const res of refused) {
      expect(res.headers.get("retry-after")).toBe("1");
      expect(await res.json()).toEqual({ error: "audit reads busy, retry" });
    }
    for (const res of answers.filter((r) => r.status !== 503)) {
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ entries: [], cursor: ids[AUDIT_SCAN_PER_REQUEST - 1] });
    }
  });
});

describe("GET /registry/audit: following the cursor", () => {
  it("returns every entry the credential may see exactly once, newest first, whatever the page size", async () => {
    const mixed = pinboards.mixed;
    // One entry in 97 is /mine's; the rest are another tenant's.
    await fill(mixed, 3_000, (i) => (i % 97 === 5 ? ["/mine", ...namespaces("other")] : namespaces("other")));
    const all = await readAll(mixed, await credential("pinboard:operator"), 500);
    expect(all.ids).toEqual(await streamIds(t, "mixed:{global}:audit"));
    const mine = all.entries.filter((e) => e.target.namespaces?.[0] === "/mine").map((e) => e.id);
    expect(mine.length).toBe(31);

    const narrow = await credential("pinboard:operator", { namespaces: ["/mine"] });
    for (const limit of [1, 7, 100, 500]) {
      const seen = await readAll(mixed, narrow, limit);
      expect(seen.ids, `limit ${limit}`).toEqual(mine);
      for (const e of seen.entries) expect(e.target.namespaces).toEqual(["/mine"]);
    }
  });
});

async function readAll(pb: TestPinboard, token: string, limit: number) {
  const entries: Awaited<ReturnType<typeof readTrail>>["entries"] = [];
  let cursor: string | undefined;
  do {
    const page = await readTrail(pb, token, `?limit=${limit}${cursor ? `&before=${cursor}` : ""}`);
    expect(page.entries.length).toBeLessThanOrEqual(limit);
    entries.push(...page.entries);
    cursor = page.cursor;
  } while (cursor !== undefined);
  return { entries, ids: entries.map((e) => e.id) };
}
