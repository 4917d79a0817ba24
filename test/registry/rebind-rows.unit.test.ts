import { describe, expect, it } from "vitest";
import { Keys } from "../../src/redis/keys.ts";
import { REBIND_CHUNK_IDS, rebindRowsCalls } from "../../src/registry/lua/rebind-rows.ts";

/**
 * The register's reclaim in chunks (unit tier, no Redis): however many ids a register names, one
 * rebind-rows script call carries at most 2000 of them, of one bucket, naming each placements
 * hash once, so the Lua time of a call stays bounded and the reply maps back to every id.
 */

const args = { from: "prev", to: "next", guardClientId: "client" };

function idsOf(call: { args: (string | number)[] }): Array<{ kidx: number; id: string }> {
  const out: Array<{ kidx: number; id: string }> = [];
  for (let i = 3; i < call.args.length; i += 2) out.push({ kidx: Number(call.args[i]), id: String(call.args[i + 1]) });
  return out;
}

describe("rebindRowsCalls", () => {
  it("cuts 5000 ids of one bucket into calls of at most 2000", () => {
    const keys = new Keys("pinboard:", 1);
    const rows = Array.from({ length: 5000 }, (_, i) => ({ env: "*", ns: "/threads", id: `id-${i}` }));
    const calls = rebindRowsCalls(keys, { ...args, rows });
    expect(REBIND_CHUNK_IDS).toBe(2000);
    expect(calls.map((c) => idsOf(c).length)).toEqual([2000, 2000, 1000]);
    for (const call of calls) {
      expect(call.args.slice(0, 3)).toEqual(["prev", "next", "client"]);
      expect(call.keys).toEqual(["pinboard:{0}:clients", "pinboard:{0}:*:/threads:placements"]);
    }
    expect(calls.flatMap((c) => idsOf(c).map((p) => p.id))).toEqual(rows.map((r) => r.id));
  });

  it("spreads 100000 ids over 256 namespaces into per-bucket calls, each hash named once per call", () => {
    const keys = new Keys("pinboard:", 16);
    const namespaces = Array.from({ length: 256 }, (_, i) => `/ns-${i}`);
    const rows = Array.from({ length: 100_000 }, (_, i) => ({ env: "*", ns: namespaces[i % 256]!, id: `id-${i}` }));
    const calls = rebindRowsCalls(keys, { ...args, rows });
    let total = 0;
    const wrong: string[] = [];
    for (const call of calls) {
      const pairs = idsOf(call);
      total += pairs.length;
      expect(pairs.length).toBeLessThanOrEqual(REBIND_CHUNK_IDS);
      expect(new Set(call.keys).size).toBe(call.keys.length);
      const bucket = keys.bucketOf(pairs[0]!.id);
      expect(call.keys[0]).toBe(keys.clients(bucket));
      for (const { kidx, id } of pairs) {
        const ns = call.placementNs[kidx - 2];
        const right =
          keys.bucketOf(id) === bucket &&
          call.keys[kidx - 1] === keys.placements(bucket, "*", ns ?? "") &&
          rows[Number(id.slice(3))]!.ns === ns;
        if (!right) wrong.push(id);
      }
    }
    expect(wrong).toEqual([]);
    expect(total).toBe(100_000);
    expect(calls.length).toBeLessThanOrEqual(16 + Math.ceil(100_000 / REBIND_CHUNK_IDS));
  });
});
