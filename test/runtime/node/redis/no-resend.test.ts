import { createHash } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { LuaScript } from "../../../../src/contract/lua-script.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../../../src/runtime/node/dev-store/embedded-redis.ts";
import { TcpRedis } from "../../../../src/runtime/node/redis/tcp.ts";
import { type ReplyHoldingProxy, startReplyHoldingProxy } from "../../../redis/reply-holding-proxy.ts";
import { until } from "../../../support/local-worker.ts";

/**
 * The Node entry's port to one Redis server (REDIS_URL) never sends a command twice: a script
 * call in flight when its connection dies fails, and is not sent again on the next connection,
 * whether it had run (its reply lost) or not (held behind CLIENT PAUSE). A command sent while the
 * connection is down waits unsent and is sent once when it is back.
 */

const script = (name: string, body: string): LuaScript => ({
  name,
  script: body,
  sha: createHash("sha1").update(body).digest("hex"),
});
const incr = script("test-incr", "return redis.call('INCR', KEYS[1])");

let server: EmbeddedRedis;
let admin: Redis;
let proxy: ReplyHoldingProxy;
const opened: TcpRedis[] = [];

function port(url: string): TcpRedis {
  const redis = new TcpRedis({ url, commandTimeoutMs: 5000 });
  opened.push(redis);
  return redis;
}

const outcomeOf = (call: Promise<unknown>) =>
  call.then(
    (reply) => ({ reply }),
    (err: Error) => ({ error: err }),
  );

beforeAll(async () => {
  server = await startEmbeddedRedis();
  admin = new Redis(server.url);
  proxy = await startReplyHoldingProxy(server.port);
});
afterAll(async () => {
  await Promise.all(opened.map((r) => r.close()));
  admin.disconnect();
  await proxy.close();
  await server.stop();
});

describe("one Redis server: no command is sent twice", () => {
  it("a script that ran but whose reply was lost with its connection fails, and does not run again", async () => {
    const redis = port(proxy.url);
    expect(await redis.run(incr, ["lost-reply:warm"], [])).toBe(1);

    proxy.holdReplies = true;
    const call = outcomeOf(redis.run(incr, ["lost-reply:counter"], []));
    // The script ran: Redis counted it, and its reply waits in the proxy.
    await until(async () => ((await admin.get("lost-reply:counter")) === "1" ? true : null), 5000, 10);
    proxy.holdReplies = false;
    proxy.cut();

    const outcome = await call;
    expect(outcome).toHaveProperty("error");
    // The connection is made again; nothing it carries runs the script a second time.
    await until(async () => ((await redis.get("lost-reply:probe").catch(() => "down")) === null ? true : null), 5000);
    await new Promise((r) => setTimeout(r, 300));
    expect(await admin.get("lost-reply:counter")).toBe("1");
  });

  it("a script written but held by CLIENT PAUSE when its connection is killed fails, and never runs", async () => {
    const redis = port(server.url);
    expect(await redis.run(incr, ["paused:warm"], [])).toBe(1);
    const pauser = new Redis(server.url);
    try {
      await pauser.call("CLIENT", "PAUSE", "500", "WRITE");
      const call = outcomeOf(redis.run(incr, ["paused:counter"], []));
      await new Promise((r) => setTimeout(r, 50));
      await pauser.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      const outcome = await call;
      expect(outcome).toHaveProperty("error");
      // Past the pause, on a new connection: the killed connection's script was never run, nor sent again.
      await until(async () => ((await redis.get("paused:probe").catch(() => "down")) === null ? true : null), 5000);
      await new Promise((r) => setTimeout(r, 600));
      expect(await admin.get("paused:counter")).toBeNull();
    } finally {
      pauser.disconnect();
    }
  });

  it("a script sent while the connection is down waits unsent and runs once when it is back", async () => {
    const redis = port(proxy.url);
    expect(await redis.run(incr, ["offline:warm"], [])).toBe(1);
    const before = proxy.accepted;
    proxy.cut();
    // Sent once the client knows its connection is gone: it waits for the next one.
    await until(() => ((redis.client as Redis).status === "reconnecting" ? true : null), 5000, 1);
    const reply = await redis.run(incr, ["offline:counter"], []);
    expect(reply).toBe(1);
    expect(proxy.accepted).toBeGreaterThan(before);
    await new Promise((r) => setTimeout(r, 300));
    expect(await admin.get("offline:counter")).toBe("1");
  });
});
