import { describe, expect, it } from "vitest";
import type { RedisRestServer } from "../../scripts/redis-rest.ts";
import { defineScript } from "../../src/contract/lua-script.ts";
import { RedisOutageGuard } from "../../src/redis/outage-guard.ts";
import { RequestBudgetSpent } from "../../src/redis/request-meter.ts";
import type { UpstashRedis } from "../../src/redis/rest/upstash-redis.ts";
import { SubrequestBudget } from "../../src/sweeper/subrequest-budget.ts";
import { flushScripts, loadScript, type TestRedis } from "../support/redis.ts";
import { useRestBridge } from "../support/rest-bridge.ts";

/**
 * Metered views of a Redis port (what a sweep pass runs on): each request draws from a budget
 * before it goes out, and a draw past it is refused with RequestBudgetSpent, nothing sent, and
 * passes the guard as it is (not a 503: Redis is not at fault). Over REST the count is the HTTP
 * requests that reach the endpoint: a pipeline of commands is one, a NOSCRIPT fallback another.
 * Over TCP each call counts one.
 */

const TOKEN = "request-meter-token";
let t: TestRedis;
let bridge: RedisRestServer;
let rest: UpstashRedis;
useRestBridge(TOKEN, (f) => ({ t, bridge, rest } = f));

describe("a metered REST port", () => {
  it("counts a pipeline of commands as the one HTTP request it is", async () => {
    const budget = new SubrequestBudget(5);
    const port = new RedisOutageGuard(rest).metered(budget);
    const before = bridge.requests();
    await Promise.all([port.set("{m}a", "1"), port.set("{m}b", "2"), port.get("{m}c"), port.timeMs()]);
    expect(bridge.requests() - before).toBe(1);
    expect(budget.used).toBe(1);
  });

  it("counts the EVAL after a NOSCRIPT as a request of its own", async () => {
    const body = "return ARGV[1]";
    const script = { ...defineScript("request-meter-test-echo", body, ""), sha: await loadScript(t, body) };
    await flushScripts(t);
    const budget = new SubrequestBudget(5);
    const before = bridge.requests();
    expect(await new RedisOutageGuard(rest).metered(budget).run(script, ["{m}k"], ["hello"])).toBe("hello");
    expect(bridge.requests() - before).toBe(2);
    expect(budget.used).toBe(2);
  });

  it("refuses past the budget with RequestBudgetSpent, sending nothing", async () => {
    const budget = new SubrequestBudget(1);
    const port = new RedisOutageGuard(rest).metered(budget);
    await port.set("{m}first", "1");
    const before = bridge.requests();
    const err = await port.set("{m}second", "2").then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(RequestBudgetSpent);
    expect(bridge.requests()).toBe(before);
    expect(await t.redis.get("{m}second")).toBeNull();
  });
});

describe("a metered TCP port", () => {
  it("counts each call and refuses past the budget with RequestBudgetSpent, sending nothing", async () => {
    const budget = new SubrequestBudget(2);
    const port = new RedisOutageGuard(t.redis).metered(budget);
    await port.set("{m}tcp-1", "1");
    await port.set("{m}tcp-2", "2");
    await expect(port.set("{m}tcp-3", "3")).rejects.toBeInstanceOf(RequestBudgetSpent);
    expect(budget.used).toBe(2);
    expect(await t.redis.get("{m}tcp-2")).toBe("2");
    expect(await t.redis.get("{m}tcp-3")).toBeNull();
  });
});
