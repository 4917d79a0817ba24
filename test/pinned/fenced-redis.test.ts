import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FencedRedis, fenceKeyOf, StaleEpochError } from "../../src/pinned/index.ts";
import { clusterClient } from "../support/durability.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * The epoch as a fencing token in a Redis of the user's own (on a Cluster when the suite runs on
 * one): a write carrying an older epoch than the key's fence is refused and changes nothing.
 */

let t: TestRedis;
let fenced: FencedRedis;
beforeAll(async () => {
  t = await startTestRedis();
  fenced = new FencedRedis({ redis: t.clusterNodes ? clusterClient(t.clusterNodes) : t.url });
});
afterAll(async () => {
  if (t.clusterNodes) await fenced.client.quit();
  await fenced.close();
  await t.stop();
});

const list = (key: string) => t.redis.client.lrange(key, 0, -1);

describe("FencedRedis", () => {
  it("writes at the fence's epoch or a newer one, and refuses an older one without writing", async () => {
    const key = "log:a";
    expect(await fenced.write(key, "100", ["RPUSH", "one"])).toBe(1);
    expect(await fenced.write(key, "100", ["RPUSH", "two"])).toBe(2); // the same owner again
    expect(await fenced.write(key, "205", ["RPUSH", "three"])).toBe(3); // the new owner
    const stale = fenced.write(key, "150", ["RPUSH", "zombie"]);
    await expect(stale).rejects.toThrow(StaleEpochError);
    await expect(stale).rejects.toMatchObject({ quoted: "150", stored: "205" });
    expect(await list(key)).toEqual(["one", "two", "three"]);
    expect(await fenced.fence(key)).toBe("205");
  });

  it("compares epochs as numbers of any length, not as strings or doubles", async () => {
    const key = "counter:b";
    // 2^53 + 2 and 2^53 + 1 are the same double; "9" > "10" as strings.
    await fenced.write(key, "9007199254740994", ["SET", "x"]);
    await expect(fenced.write(key, "9007199254740993", ["SET", "y"])).rejects.toThrow(StaleEpochError);
    const other = "counter:c";
    await fenced.write(other, "10", ["INCRBY", "5"]);
    await expect(fenced.write(other, "9", ["INCRBY", "5"])).rejects.toThrow(StaleEpochError);
    expect(await fenced.write(other, "010", ["INCRBY", "1"])).toBe(6); // leading zeros: the same epoch
    expect(await t.redis.client.get(key)).toBe("x");
  });

  it("reads an epoch's leading zeros as nothing: 0007 is below 8, 008 above 7, 0012 above 9", async () => {
    await fenced.write("z:behind", "8", ["SET", "owner"]);
    const stale = fenced.write("z:behind", "0007", ["SET", "zombie"]);
    await expect(stale).rejects.toMatchObject({ quoted: "0007", stored: "8" });
    expect(await t.redis.client.get("z:behind")).toBe("owner");

    await fenced.write("z:ahead", "7", ["RPUSH", "7"]);
    expect(await fenced.write("z:ahead", "008", ["RPUSH", "008"])).toBe(2);
    expect(await fenced.write("z:ahead", "8", ["RPUSH", "8"])).toBe(3); // the same epoch
    expect(await fenced.write("z:ahead", "9", ["RPUSH", "9"])).toBe(4);

    await fenced.write("z:padded", "9", ["RPUSH", "9"]);
    expect(await fenced.write("z:padded", "0012", ["RPUSH", "0012"])).toBe(2);
    expect(await fenced.write("z:padded", "13", ["RPUSH", "13"])).toBe(3);
    await expect(fenced.write("z:padded", "0011", ["RPUSH", "0011"])).rejects.toThrow(StaleEpochError);
    expect(await list("z:padded")).toEqual(["9", "0012", "13"]);
  });

  it("keeps each fence in its key's hash slot, tagged or not, and runs every command it allows", async () => {
    expect(fenceKeyOf("plain")).toBe("pinned-fence:{plain}");
    expect(fenceKeyOf("{user:1}:cart")).toBe("pinned-fence:{user:1}:cart");
    expect(() => fenceKeyOf("odd}key")).toThrow(TypeError);
    const tagged = "{user:1}:cart";
    expect(await fenced.write(tagged, "7", ["HSET", "sku", "2"])).toBe(1);
    expect(await fenced.write(tagged, "7", ["DEL"])).toBe(1);
    expect(await t.redis.client.exists(tagged)).toBe(0);
    expect(await fenced.fence(tagged)).toBe("7");
  });

  it("refuses what it cannot fence before anything reaches Redis", async () => {
    const before = await t.snapshot();
    await expect(fenced.write("k", "12a", ["SET", "v"])).rejects.toThrow("epoch must be a decimal string");
    // @ts-expect-error: FLUSHALL is not a fenced command
    await expect(fenced.write("k", "1", ["FLUSHALL"])).rejects.toThrow("unsupported command FLUSHALL");
    expect(await t.snapshot()).toEqual(before);
  });
});
