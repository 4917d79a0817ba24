import { beforeAll, describe, expect, it } from "vitest";
import type { RedisPort } from "../../src/redis/port.ts";
import type { UpstashRedis } from "../../src/redis/rest/upstash-redis.ts";
import type { TestRedis } from "../support/redis.ts";
import { useRestBridge } from "../support/rest-bridge.ts";

/**
 * The port's HMGET on both adapters (ioredis over TCP; @upstash/redis through the REST bridge):
 * one value per field in the order asked, null where the field or the hash is missing, strings
 * that look like numbers kept as they are.
 */

const TOKEN = "hmget-token";
const KEY = "hmget:{1}:h";
let t: TestRedis;
let rest: UpstashRedis;

useRestBridge(TOKEN, (f) => ({ t, rest } = f));
beforeAll(async () => {
  await t.redis.client.hset(KEY, "a", "1", "b", "", "c", "007", "/counter/x", "host.example");
});

describe.each<[string, () => RedisPort]>([
  ["tcp", () => t.redis],
  ["rest", () => rest],
])("hmget (%s)", (_, port) => {
  it("answers each field in order, null where it is missing", async () => {
    expect(await port().hmget(KEY, ["c", "missing", "a", "b", "/counter/x"])).toEqual([
      "007",
      null,
      "1",
      "",
      "host.example",
    ]);
  });

  it("answers nulls for a missing hash, and nothing for no fields", async () => {
    expect(await port().hmget("hmget:{1}:none", ["a", "b"])).toEqual([null, null]);
    expect(await port().hmget(KEY, [])).toEqual([]);
  });
});
