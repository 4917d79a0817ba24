import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineScript } from "../../src/contract/lua-script.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
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

  it("sends the commands of one event-loop turn to a server in one write, and a lone one at once", async () => {
    // A server of its own (on a cluster run too): batching is for one connection to one server.
    const single = await startTestRedis({ single: true });
    const port = new TcpRedis({ url: single.url });
    const admin = new Redis(single.url);
    const reads = async () => Number(/total_reads_processed:(\d+)/.exec(await admin.info("stats"))![1]);
    try {
      await port.set("lone", "1");
      const before = await reads();
      const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => port.get(`k${i}`)));
      const used = (await reads()) - before;
      expect(answers).toEqual(Array(200).fill(null));
      // One read for the 200 GETs, one for the INFO that counts.
      expect(used).toBeLessThanOrEqual(3);
      const started = Date.now();
      expect(await port.get("lone")).toBe("1");
      expect(Date.now() - started).toBeLessThan(1000);
    } finally {
      admin.disconnect();
      await port.close();
      await single.stop();
    }
  });
});
