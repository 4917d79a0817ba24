import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScript } from "../../src/contract/lua-script.ts";
import { flushScripts, loadScript, scriptCached, startTestRedis, type TestRedis } from "../support/redis.ts";

let t: TestRedis;
beforeAll(async () => {
  t = await startTestRedis();
});
afterAll(() => t.stop());

describe("TcpRedis", () => {
  it("runs a script by EVAL on NOSCRIPT, then by EVALSHA", async () => {
    const echo = defineScript("test-echo", "return {KEYS[1], ARGV[1]}", "");
    const sha = await loadScript(t, echo.script);
    const script = { ...echo, sha };
    await flushScripts(t);
    expect(await scriptCached(t, sha)).toBe(false);
    expect(await t.redis.run(script, ["k"], ["v"])).toEqual(["k", "v"]);
    expect(await scriptCached(t, sha)).toBe(true);
    expect(await t.redis.run(script, ["k2"], [7])).toEqual(["k2", "7"]);
  });

  it("reads Redis TIME in milliseconds", async () => {
    const ms = await t.redis.timeMs();
    expect(Math.abs(ms - Date.now())).toBeLessThan(5000);
  });
});
