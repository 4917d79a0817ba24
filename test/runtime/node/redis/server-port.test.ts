import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LuaScript } from "../../../../src/contract/lua-script.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../../../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../../../../src/runtime/node/process/free-port.ts";
import { TcpRedis } from "../../../../src/runtime/node/redis/tcp.ts";
import { until } from "../../../support/local-worker.ts";

/**
 * The Node entry's port to one Redis server (REDIS_URL) against a real redis-server: replies
 * matched to their calls under load, AUTH and SELECT from the URL, and every way the connection
 * can fail: a refusal, a slow command, a server that goes away and comes back, one that stops
 * answering, one that is not there, a wrong password.
 */

let server: EmbeddedRedis;
let admin: Redis;
const opened: TcpRedis[] = [];

type Watched = TcpRedis & { warnings: string[]; readies: number };

function port(url: string, timeoutMs = 2000): Watched {
  const warnings: string[] = [];
  const redis = new TcpRedis({
    url,
    commandTimeoutMs: timeoutMs,
    log: { warn: (m) => warnings.push(m), info: () => {} },
  });
  let readies = 0;
  redis.client.on("ready", () => readies++);
  opened.push(redis);
  return Object.defineProperties(redis, {
    warnings: { value: warnings },
    readies: { get: () => readies },
  }) as Watched;
}

const echo: LuaScript = {
  name: "test-echo-next",
  script: "return {KEYS[1], ARGV[1], tonumber(ARGV[1]) + 1}",
  sha: createHash("sha1").update("return {KEYS[1], ARGV[1], tonumber(ARGV[1]) + 1}").digest("hex"),
};
const errorOf = (call: Promise<unknown>) =>
  call.then(
    () => new Error("no error"),
    (err: Error) => err,
  );

beforeAll(async () => {
  server = await startEmbeddedRedis();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
  admin.disconnect();
  await server.stop();
});

describe("TcpRedis on one server", () => {
  it("answers each of thousands of concurrent calls with its own reply", async () => {
    const redis = port(server.url);
    const sent = Array.from({ length: 3000 }, (_, i) => {
      if (i % 3 === 0) return redis.set(`order:${i}`, `v${i}`);
      if (i % 3 === 1) return redis.get(`order:${i - 1}`).then((r) => expect(r).toBe(`v${i - 1}`));
      return redis.run(echo, [`k${i}`], [i]).then((r) => expect(r).toEqual([`k${i}`, String(i), i + 1]));
    });
    await Promise.all(sent);
    expect(await redis.get("order:2997")).toBe("v2997");
  });

  it("sends arguments as UTF-8, byte for byte as another client reads them", async () => {
    const redis = port(server.url);
    const value = "é 🙂 \u0000 \r\n $3 *1";
    await redis.set("utf8:😀", value);
    expect(await admin.get("utf8:😀")).toBe(value);
    expect(await admin.strlen("utf8:😀")).toBe(Buffer.byteLength(value));
    expect(await redis.get("utf8:missing")).toBeNull();
  });

  it("rejects a refused command with Redis' ReplyError and keeps serving the connection", async () => {
    const redis = port(server.url);
    await redis.set("refused:string", "x");
    const refused = await errorOf(redis.hget("refused:string", "f"));
    expect(refused.name).toBe("ReplyError");
    expect(refused.message).toMatch(/^WRONGTYPE/);
    expect(await redis.get("refused:string")).toBe("x");
    expect(redis.readies).toBe(1);
  });

  it("fails a command that outlives its timeout, drops its late reply, and the next command gets its own", async () => {
    const redis = port(server.url, 500);
    await redis.set("slow:after", "mine");
    const client = redis.client as Redis;
    const started = Date.now();
    // BLPOP holds the connection for 0.6 s and then answers nil, after its command timed out.
    const blocked = errorOf(client.blpop("slow:empty-list", 0.6));
    const behind = errorOf(redis.get("slow:after"));
    expect((await blocked).message).toBe("Command timed out");
    // The GET waited behind BLPOP and timed out with it.
    expect((await behind).message).toBe("Command timed out");
    // Past BLPOP's answer (0.6 s), before twice the timeout (1 s) would take the server for gone.
    await new Promise((r) => setTimeout(r, 850 - (Date.now() - started)));
    // The same connection (no error, no reconnect), in step: the late nil and the late value went to no one.
    expect(await client.echo("in step")).toBe("in step");
    expect(await redis.get("slow:after")).toBe("mine");
    expect(redis.warnings).toEqual([]);
    expect(redis.readies).toBe(1);
  });

  it("authenticates and selects the database the URL names, and names a wrong password", async () => {
    const guardedPort = await freePort();
    const guarded = await startEmbeddedRedis({ port: guardedPort, args: ["--requirepass", "s3cret/pw"] });
    try {
      const redis = port(`redis://:${encodeURIComponent("s3cret/pw")}@127.0.0.1:${guardedPort}/3`);
      await redis.set("in-db-3", "yes");
      const check = new Redis({ port: guardedPort, password: "s3cret/pw", db: 3 });
      expect(await check.get("in-db-3")).toBe("yes");
      check.disconnect();

      const wrong = port(`redis://:wrong@127.0.0.1:${guardedPort}`);
      expect(await errorOf(wrong.get("x"))).toBeInstanceOf(Error);
      await until(() => (wrong.lastError ? true : null), 2000, 20);
      expect(wrong.lastError).toMatch(/WRONGPASS|invalid password/i);
    } finally {
      await guarded.stop();
    }
  });

  it("fails at once while Redis is down, and is back when Redis is", async () => {
    const own = await startEmbeddedRedis({ port: await freePort() });
    let again: EmbeddedRedis | undefined;
    try {
      const redis = port(own.url);
      await redis.set("up", "1");
      await own.stop();
      const down = Date.now();
      expect(await errorOf(redis.get("up"))).toBeInstanceOf(Error);
      expect(Date.now() - down).toBeLessThan(1900);
      await until(() => (redis.lastError ? true : null), 2000, 20);
      expect(redis.warnings.some((w) => /ECONNREFUSED|ECONNRESET|Connection is closed/.test(w))).toBe(true);

      again = await startEmbeddedRedis({ port: own.port });
      await until(async () => ((await redis.get("up").catch(() => "down")) === null ? true : null), 5000, 50);
      expect(redis.readies).toBeGreaterThanOrEqual(2);
      expect(redis.lastError).toBeUndefined();
    } finally {
      await (again ?? own).stop();
    }
  });

  it("takes a server that stopped answering for gone after twice the timeout, and reconnects once it answers", async () => {
    const own = await startEmbeddedRedis({ port: await freePort() });
    try {
      const redis = port(own.url, 200);
      await redis.set("stalled", "0");
      own.process.kill("SIGSTOP");
      expect((await errorOf(redis.set("stalled", "1"))).message).toBe("Command timed out");
      await until(() => (redis.warnings.some((w) => /Socket timeout.*400ms/.test(w)) ? true : null), 3000, 20);
      own.process.kill("SIGCONT");
      await until(async () => ((await redis.get("stalled").catch(() => null)) !== null ? true : null), 5000, 50);
      expect(redis.readies).toBeGreaterThanOrEqual(2);
    } finally {
      own.process.kill("SIGCONT");
      await own.stop();
    }
  });

  it("fails calls to a server that is not there, and keeps the connect error for /readyz", async () => {
    const redis = port(`redis://127.0.0.1:${await freePort()}`);
    expect(await errorOf(redis.get("x"))).toBeInstanceOf(Error);
    await until(() => (redis.lastError ? true : null), 2000, 20);
    expect(redis.lastError).toMatch(/ECONNREFUSED/);
  });

  it("answers what was sent before close, then refuses", async () => {
    const redis = port(server.url);
    await redis.get("warm");
    const before = redis.set("closing", "done");
    await redis.close();
    await before;
    expect(await admin.get("closing")).toBe("done");
    await expect(redis.get("closing")).rejects.toThrow("Connection is closed.");
  });
});
