import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseSpreadSlice, spreadSliceCall } from "../../src/operator/lua/index.ts";
import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";
import { putRows, type RowFields } from "../support/rows.ts";

/**
 * lua/spread-slice-1.lua, one slice of the spread count: rows counted by owner and hostname
 * inside Redis, a placed row under its session and any other (placeholder, passed fence) under
 * "", each call looking at about its budget of rows and answering where the next goes on.
 */

const keys = new Keys("pinboard:", 16);
let t: TestRedis;
beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(() => t?.stop());

/** `n` ids that all fall in `bucket`. */
function idsInBucket(bucket: number, n: number, tag: string): string[] {
  const ids: string[] = [];
  for (let i = 0; ids.length < n; i++) if (keys.bucketOf(`${tag}-${i}`) === bucket) ids.push(`${tag}-${i}`);
  return ids;
}

type Tally = Record<string, number>;
async function slice(ns: string, cursor: string, budget: number, count: number) {
  const call = spreadSliceCall(keys, { bucket: 3, env: SINGLE_ENV, ns, cursor, budget, count });
  return parseSpreadSlice(await t.redis.run(call.script, call.keys, call.args));
}
function add(into: Tally, owners: Array<{ sessionId: string; hostname: string; rows: number }>): Tally {
  for (const o of owners) into[`${o.sessionId}|${o.hostname}`] = (into[`${o.sessionId}|${o.hostname}`] ?? 0) + o.rows;
  return into;
}

describe("spread-slice", () => {
  it("counts placed rows by owner and hostname, and the rest under an empty session", async () => {
    const ids = idsInBucket(3, 60, "small");
    const past = String(Date.now() - 60_000);
    const future = String(Date.now() + 600_000);
    const row = (i: number): RowFields => {
      if (i < 20) return { sessionId: "a", epoch: "5" };
      if (i < 30) return { sessionId: "a", epoch: "6", expiry: future, tag: "t\nwith a line" };
      if (i < 40) return { sessionId: "b", epoch: "7", hostname: "h.example" };
      if (i < 45) return { sessionId: "a", epoch: "8", expiry: past };
      if (i < 50) return { sessionId: "", hostname: "target.example" };
      return { sessionId: "dead", epoch: "9" };
    };
    await putRows(
      t,
      "/small",
      ids.map((id, i) => ({ id, row: row(i) })),
    );
    const result = await slice("/small", "0", 10_000, 1000);
    expect(result.next).toBe("0");
    expect(result.scanned).toBe(60);
    expect(add({}, result.owners)).toEqual({
      "a|": 30,
      "b|h.example": 10,
      "|": 5,
      "|target.example": 5,
      "dead|": 10,
    });
  });

  it("looks at about its budget of rows per call and goes on from its cursor to the end", async () => {
    const ids = idsInBucket(3, 5000, "large");
    await putRows(
      t,
      "/large",
      ids.map((id, i) => ({ id, row: { sessionId: i % 2 ? "odd" : "even", epoch: "1" } })),
    );
    const tally: Tally = {};
    let cursor = "0";
    let calls = 0;
    let scanned = 0;
    do {
      const result = await slice("/large", cursor, 1000, 100);
      // Up to the budget unless the hash ended; a page of COUNT 100 may pass it by about one page.
      if (result.next !== "0") expect(result.scanned).toBeGreaterThanOrEqual(1000);
      expect(result.scanned).toBeLessThan(1000 + 200);
      add(tally, result.owners);
      scanned += result.scanned;
      cursor = result.next;
      calls++;
    } while (cursor !== "0" && calls < 100);
    expect(calls).toBeGreaterThanOrEqual(4);
    expect(calls).toBeLessThanOrEqual(5);
    expect(scanned).toBe(5000);
    expect(tally).toEqual({ "even|": 2500, "odd|": 2500 });
  });
});
