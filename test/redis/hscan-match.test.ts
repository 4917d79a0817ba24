import { beforeAll, describe, expect, it } from "vitest";
import { prefixPattern } from "../../src/redis/glob.ts";
import type { RedisPort } from "../../src/redis/port.ts";
import type { UpstashRedis } from "../../src/redis/rest/upstash-redis.ts";
import type { TestRedis } from "../support/redis.ts";
import { useRestBridge } from "../support/rest-bridge.ts";

/**
 * The port's HSCAN with MATCH, on both adapters (ioredis over TCP; @upstash/redis through the
 * REST bridge): only fields matching the pattern come back, a prefix's glob characters match
 * only themselves, and a scan of a large hash in pages with COUNT sees every matching field
 * once.
 */

const TOKEN = "hscan-match-token";
const KEY = "hscan-match:{1}:h";
const BIG = "hscan-match:{1}:big";
const FIELDS = ["g*1", "g*2", "gx1", "g[1]", "g1", "g?", "gz", "g\\1", "g]", "h*1"];
const NUMERIC = "hscan-match:{1}:numeric";

let t: TestRedis;
let rest: UpstashRedis;

useRestBridge(TOKEN, (f) => ({ t, rest } = f));
beforeAll(async () => {
  await t.redis.client.hset(KEY, Object.fromEntries(FIELDS.map((f) => [f, `v-${f}`])));
  // A hashtable-encoded hash (past 128 fields), so COUNT pages it.
  const big: Record<string, string> = {};
  for (let i = 0; i < 3000; i++) big[`${i % 10 === 0 ? "hit" : "miss"}-${i}`] = String(i);
  await t.redis.client.hset(BIG, big);
  // As arguments, in this order (an object would put its integer-like keys first).
  await t.redis.client.hset(NUMERIC, "x", "1", "10", "2", "b", "3", "2", "4", "007", "5", "-1", "6");
});

async function scanAll(port: RedisPort, key: string, count: number, match?: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let cursor = "0";
  let pages = 0;
  do {
    const [next, rows] = await port.hscan(key, cursor, count, match);
    for (const [field, value] of rows) {
      expect(out[field]).toBeUndefined();
      out[field] = value;
    }
    cursor = next;
    pages++;
  } while (cursor !== "0");
  if (key === BIG) expect(pages).toBeGreaterThan(1);
  return out;
}

const adapters = () =>
  [
    ["TcpRedis", t.redis as RedisPort],
    ["UpstashRedis", rest as RedisPort],
  ] as const;

describe("hscan with match", () => {
  it("answers only the fields that start with the prefix, glob characters matching themselves", async () => {
    for (const [name, port] of adapters()) {
      const fieldsOf = async (prefix: string) =>
        Object.keys(await scanAll(port, KEY, 100, prefixPattern(prefix))).sort();
      expect({ name, star: await fieldsOf("g*") }).toEqual({ name, star: ["g*1", "g*2"] });
      expect({ name, bracket: await fieldsOf("g[") }).toEqual({ name, bracket: ["g[1]"] });
      expect({ name, close: await fieldsOf("g]") }).toEqual({ name, close: ["g]"] });
      expect({ name, question: await fieldsOf("g?") }).toEqual({ name, question: ["g?"] });
      expect({ name, backslash: await fieldsOf("g\\") }).toEqual({ name, backslash: ["g\\1"] });
      expect({ name, all: await fieldsOf("g") }).toEqual({ name, all: FIELDS.filter((f) => f.startsWith("g")).sort() });
      expect({ name, values: await scanAll(port, KEY, 100, prefixPattern("g*")) }).toEqual({
        name,
        values: { "g*1": "v-g*1", "g*2": "v-g*2" },
      });
      // Without a match, every field.
      expect({ name, none: Object.keys(await scanAll(port, KEY, 100)).sort() }).toEqual({
        name,
        none: [...FIELDS].sort(),
      });
    }
  });

  it("pages a large hash by COUNT, each matching field once", async () => {
    for (const [name, port] of adapters()) {
      const hits = await scanAll(port, BIG, 200, prefixPattern("hit-"));
      expect({ name, hits: Object.keys(hits).length }).toEqual({ name, hits: 300 });
      expect(Object.keys(hits).every((f) => f.startsWith("hit-"))).toBe(true);
    }
  });

  it("answers the pairs in Redis' order, integer-like fields where Redis puts them", async () => {
    const [, flat] = await t.redis.client.hscan(NUMERIC, "0", "COUNT", 100);
    const raw: Array<[string, string]> = [];
    for (let i = 0; i < flat.length; i += 2) raw.push([flat[i]!, flat[i + 1]!]);
    expect(raw.map(([f]) => f)).toEqual(["x", "10", "b", "2", "007", "-1"]);
    for (const [name, port] of adapters()) {
      expect({ name, page: (await port.hscan(NUMERIC, "0", 100))[1] }).toEqual({ name, page: raw });
    }
  });
});
