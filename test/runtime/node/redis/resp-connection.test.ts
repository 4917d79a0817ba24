import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../../../src/runtime/node/embedded-redis.ts";
import { freePort } from "../../../../src/runtime/node/free-port.ts";
import { RespConnection, type RespConnectionOptions } from "../../../../src/runtime/node/redis/resp-connection.ts";
import { until } from "../../../support/local-worker.ts";

/**
 * Pinboard's own Redis connection (the Node entry's REDIS_URL port) against a real redis-server:
 * replies matched to their commands under load, AUTH and SELECT from the URL, and every way the
 * connection can fail: a refusal, a slow command, a server that goes away and comes back, one
 * that is not there, a wrong password.
 */

let server: EmbeddedRedis;
let admin: Redis;
const opened: RespConnection[] = [];

function connection(
  url: string,
  extra: Partial<RespConnectionOptions> = {},
): RespConnection & { errors: string[]; readies: number } {
  const seen = { errors: [] as string[], readies: 0 };
  const c = new RespConnection({
    url,
    timeoutMs: 2000,
    onError: (err) => seen.errors.push(err.message || String((err as NodeJS.ErrnoException).code)),
    onReady: () => seen.readies++,
    ...extra,
  });
  opened.push(c);
  return Object.defineProperties(c, {
    errors: { value: seen.errors },
    readies: { get: () => seen.readies },
  }) as RespConnection & { errors: string[]; readies: number };
}

beforeAll(async () => {
  server = await startEmbeddedRedis();
  admin = new Redis(server.url);
});
afterAll(async () => {
  await Promise.all(opened.map((c) => c.close()));
  admin.disconnect();
  await server.stop();
});

describe("RespConnection", () => {
  it("answers each of thousands of concurrent commands with its own reply", async () => {
    const c = connection(server.url);
    const sent = Array.from({ length: 3000 }, (_, i) => {
      if (i % 3 === 0) return c.send(["SET", `order:${i}`, `v${i}`]).then((r) => expect(r).toBe("OK"));
      if (i % 3 === 1) return c.send(["INCRBY", "order:counter", i]).then((r) => expect(typeof r).toBe("number"));
      return c
        .send(["EVAL", "return {KEYS[1], ARGV[1], tonumber(ARGV[1]) + 1}", 1, `k${i}`, i])
        .then((r) => expect(r).toEqual([`k${i}`, String(i), i + 1]));
    });
    await Promise.all(sent);
    expect(await c.send(["GET", "order:2997"])).toBe("v2997");
    expect(Number(await admin.get("order:counter"))).toBe(
      Array.from({ length: 1000 }, (_, k) => 3 * k + 1).reduce((a, b) => a + b, 0),
    );
  });

  it("sends arguments as UTF-8, byte for byte as another client reads them", async () => {
    const c = connection(server.url);
    const value = "é 🙂 \u0000 \r\n $3 *1";
    expect(await c.send(["SET", "utf8:😀", value])).toBe("OK");
    expect(await admin.get("utf8:😀")).toBe(value);
    expect(await c.send(["STRLEN", "utf8:😀"])).toBe(Buffer.byteLength(value));
    expect(await c.send(["GET", "utf8:missing"])).toBeNull();
  });

  it("rejects a refused command with Redis' ReplyError and keeps serving the connection", async () => {
    const c = connection(server.url);
    await c.send(["SET", "refused:string", "x"]);
    const refused = await c.send(["HGET", "refused:string", "f"]).catch((err: Error) => err);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).name).toBe("ReplyError");
    expect((refused as Error).message).toMatch(/^WRONGTYPE/);
    const noScript = await c.send(["EVALSHA", "0".repeat(40), 0]).catch((err: Error) => err);
    expect((noScript as Error).message).toMatch(/^NOSCRIPT/);
    expect(await c.send(["GET", "refused:string"])).toBe("x");
  });

  it("fails a command that outlives its timeout, drops its late reply, and the next command gets its own", async () => {
    const c = connection(server.url, { timeoutMs: 500 });
    await c.send(["SET", "slow:after", "mine"]);
    const started = Date.now();
    // BLPOP holds the connection for 0.6 s and then answers nil, after its command timed out.
    const blocked = c.send(["BLPOP", "slow:empty-list", "0.6"]).catch((err: Error) => err);
    const behind = c.send(["GET", "slow:after"]).catch((err: Error) => err);
    expect(((await blocked) as Error).message).toBe("Command timed out");
    // The GET waited behind BLPOP and timed out with it.
    expect(((await behind) as Error).message).toBe("Command timed out");
    // Past BLPOP's answer (0.6 s), before twice the timeout (1 s) would take the server for gone.
    await new Promise((r) => setTimeout(r, 850 - (Date.now() - started)));
    // The same connection (no error, no reconnect), in step: the late nil and the late value went to no one.
    expect(await c.send(["ECHO", "in step"])).toBe("in step");
    expect(await c.send(["GET", "slow:after"])).toBe("mine");
    expect(c.errors).toEqual([]);
    expect(c.readies).toBe(1);
  });

  it("authenticates and selects the database the URL names", async () => {
    const port = await freePort();
    const guarded = await startEmbeddedRedis({ port, args: ["--requirepass", "s3cret/pw"] });
    try {
      const c = connection(`redis://:${encodeURIComponent("s3cret/pw")}@127.0.0.1:${port}/3`);
      expect(await c.send(["SET", "in-db-3", "yes"])).toBe("OK");
      const check = new Redis({ port, password: "s3cret/pw", db: 3 });
      expect(await check.get("in-db-3")).toBe("yes");
      check.disconnect();

      const wrong = connection(`redis://:wrong@127.0.0.1:${port}`);
      const refused = await wrong.send(["PING"]).catch((err: Error) => err);
      expect((refused as Error).message).toMatch(/WRONGPASS|invalid password/i);
      await until(() => (wrong.errors.length > 0 ? true : null), 2000, 20);
      expect(wrong.errors[0]).toMatch(/WRONGPASS|invalid password/i);
      expect(wrong.ready).toBe(false);
    } finally {
      await guarded.stop();
    }
  });

  it("fails at once while Redis is down, never sends a command twice, and is back when Redis is", async () => {
    const port = await freePort();
    let own = await startEmbeddedRedis({ port });
    try {
      const c = connection(own.url);
      expect(await c.send(["PING"])).toBe("PONG");
      expect(c.readies).toBe(1);

      // A write in flight when its connection dies is lost, not replayed on the next connection.
      const held = new Redis(own.url);
      await held.call("CLIENT", "PAUSE", "500", "WRITE");
      const inFlight = c.send(["INCR", "replay:counter"]).catch((err: Error) => err);
      await new Promise((r) => setTimeout(r, 50));
      await held.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      expect(((await inFlight) as Error).message).toBe("Connection is closed.");
      await until(() => (c.ready ? true : null), 3000, 10);
      await new Promise((r) => setTimeout(r, 600));
      expect(await c.send(["GET", "replay:counter"])).toBeNull();
      held.disconnect();

      await own.stop();
      const down = Date.now();
      const failed = await c.send(["PING"]).catch((err: Error) => err);
      expect(failed).toBeInstanceOf(Error);
      expect(Date.now() - down).toBeLessThan(1900);
      expect(c.errors.some((e) => /ECONNREFUSED|Connection is closed/.test(e))).toBe(true);

      own = await startEmbeddedRedis({ port });
      await until(async () => ((await c.send(["PING"]).catch(() => null)) === "PONG" ? true : null), 5000, 50);
      expect(c.readies).toBeGreaterThanOrEqual(2);
    } finally {
      await own.stop();
    }
  });

  it("takes a server that stopped answering for gone after twice the timeout, and reconnects once it answers", async () => {
    const own = await startEmbeddedRedis({ port: await freePort() });
    try {
      const c = connection(own.url, { timeoutMs: 200 });
      expect(await c.send(["PING"])).toBe("PONG");
      own.process.kill("SIGSTOP");
      const stalled = await c.send(["SET", "stalled", "1"]).catch((err: Error) => err);
      expect((stalled as Error).message).toBe("Command timed out");
      await until(() => (c.errors.some((e) => e === "no reply from Redis in 400 ms") ? true : null), 3000, 20);
      own.process.kill("SIGCONT");
      await until(async () => ((await c.send(["PING"]).catch(() => null)) === "PONG" ? true : null), 5000, 50);
      expect(c.readies).toBeGreaterThanOrEqual(2);
    } finally {
      own.process.kill("SIGCONT");
      await own.stop();
    }
  });

  it("fails commands to a server that is not there with the connect error", async () => {
    const c = connection(`redis://127.0.0.1:${await freePort()}`);
    const failed = await c.send(["PING"]).catch((err: Error) => err);
    expect((failed as NodeJS.ErrnoException).code).toBe("ECONNREFUSED");
    expect(c.errors[0]).toMatch(/ECONNREFUSED/);
  });

  it("answers what was written before close, then refuses", async () => {
    const c = connection(server.url);
    await c.send(["PING"]);
    const before = c.send(["SET", "closing", "done"]);
    await c.close();
    expect(await before).toBe("OK");
    expect(await admin.get("closing")).toBe("done");
    await expect(c.send(["PING"])).rejects.toThrow("Connection is closed.");
  });
});
