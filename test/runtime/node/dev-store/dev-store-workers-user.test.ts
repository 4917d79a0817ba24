import { mkdtempSync, readFileSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { DurableKeys, instanceMember } from "../../../../src/contract/durable-index.ts";
import { RedisDurabilityStore } from "../../../../src/pinned/index.ts";
import { Keys } from "../../../../src/redis/keys.ts";
import { DEV_STORE_DIR } from "../../../../src/runtime/node/dev-store/dev-store.ts";
import { workerAclRules } from "../../../../src/runtime/node/dev-store/dev-store-users.ts";
import { startEmbeddedRedis } from "../../../../src/runtime/node/dev-store/embedded-redis.ts";
import { type RunningPinboard, startNode } from "../../../../src/runtime/node/start-node.ts";
import { spawnWorkerProcess, type WorkerProcess } from "../../../support/spawn-worker.ts";

/**
 * A start without REDIS_URL (startNode with a dev folder, as `npm start` runs it) gives workers a
 * Redis user of their own: the URL in .pinboard/dev.env reaches the durable store's keys with the
 * commands the worker library sends, and nothing of Pinboard's (sessions and their HMAC secrets,
 * the audit trail) nor any admin command.
 */

const dir = mkdtempSync(join(tmpdir(), "pinboard-workers-user-"));
const keys = new Keys("pinboard:", 16);
const durable = new DurableKeys();
let pb: RunningPinboard;
let banner = "";
let env: Record<string, string>;
let workerProcess: WorkerProcess | undefined;
const clients: Redis[] = [];

/** The `export NAME='value'` lines of a dev env file. */
function readEnvFile(path: string): Record<string, string> {
  const text = readFileSync(path, "utf8");
  return Object.fromEntries([...text.matchAll(/^export (\w+)='([^']*)'$/gm)].map((m) => [m[1]!, m[2]!]));
}

function client(url: string): Redis {
  const c = new Redis(url, { maxRetriesPerRequest: 0, enableReadyCheck: false });
  c.on("error", () => {});
  clients.push(c);
  return c;
}

beforeAll(async () => {
  const log = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    banner += `${args.join(" ")}\n`;
  });
  try {
    pb = await startNode(
      { PORT: "0", HOST: "127.0.0.1", PINBOARD_LOG_LEVEL: "warn", PINBOARD_SHARDS: "16" },
      { devDir: dir },
    );
  } finally {
    log.mockRestore();
  }
  env = readEnvFile(join(dir, ".pinboard", "dev.env"));
  workerProcess = await spawnWorkerProcess("durable-worker-main.ts", {
    PINBOARD_URL: env.PINBOARD_URL!,
    CREDENTIAL: env.PINBOARD_WORKER_TOKEN!,
    DURABLE_REDIS_URL: env.DURABLE_REDIS_URL!,
  });
}, 60_000);

afterAll(async () => {
  await workerProcess?.stop();
  for (const c of clients) c.disconnect();
  await pb?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const adminUrl = () => {
  const port = readFileSync(join(dir, DEV_STORE_DIR, "port"), "utf8").trim();
  const password = readFileSync(join(dir, DEV_STORE_DIR, "default.password"), "utf8").trim();
  return `redis://:${password}@127.0.0.1:${port}`;
};

describe("the workers' Redis user of the dev store", { timeout: 60_000 }, () => {
  it("is what the env file hands workers; its passwords are files of mode 0600", () => {
    const port = readFileSync(join(dir, DEV_STORE_DIR, "port"), "utf8").trim();
    const workerPassword = readFileSync(join(dir, DEV_STORE_DIR, "pinned.password"), "utf8").trim();
    expect(env.DURABLE_REDIS_URL).toBe(`redis://pinned:${workerPassword}@127.0.0.1:${port}`);
    expect(env.PINBOARD_URL).toBe(pb.url);
    for (const file of ["default.password", "pinned.password"])
      expect(statSync(join(dir, DEV_STORE_DIR, file)).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, ".pinboard", "dev.env")).mode & 0o777).toBe(0o600);
    expect(banner).toContain(`Redis: embedded redis-server at redis://127.0.0.1:${port} (data in `);
    expect(banner).not.toContain(workerPassword);
  });

  it("serves a real worker's durable state: a counter counts through Pinboard, and its index is where the sweeper reads", async () => {
    const increment = () => fetch(`${pb.url}/counter/acl/increment`, { method: "POST" });
    const first = await increment();
    expect(first.status).toBe(200);
    expect(await first.json()).toMatchObject({ count: 1 });
    expect(await (await increment()).json()).toMatchObject({ count: 2 });
    // Pinboard's own connection (the sweeper's) reads the index the worker wrote.
    const admin = client(adminUrl());
    expect(await admin.hexists(durable.instances, instanceMember("/counter", "acl"))).toBe(1);
    expect(await admin.hget(durable.data("/counter", "acl"), "count")).toBe("2");
  });

  it("runs every operation of the worker library's Redis durability store", async () => {
    const store = new RedisDurabilityStore({ redis: env.DURABLE_REDIS_URL! });
    try {
      const ref = { ns: "/counter", id: "direct" };
      expect(await store.activate(ref, "5", { hostname: "h1" })).toEqual({ alarm: null });
      await store.put(ref, "5", [
        ["a", "1"],
        ["b", "2"],
      ]);
      expect(await store.get(ref, ["a", "b", "c"])).toEqual(["1", "2", null]);
      expect(await store.list(ref, { prefix: "a" })).toEqual([["a", "1"]]);
      expect(await store.list(ref, { reverse: true, limit: 1 })).toEqual([["b", "2"]]);
      await store.setAlarm(ref, "5", 1000);
      expect(await store.getAlarm(ref)).toBe(1000);
      expect(await store.epochOf(ref)).toBe("5");
      const admin = client(adminUrl());
      expect(await admin.zscore(durable.alarms, instanceMember("/counter", "direct"))).toBe("1000");
      expect(await store.clearAlarm(ref, "5", 1000)).toBe(true);
      expect(await admin.zscore(durable.alarms, instanceMember("/counter", "direct"))).toBeNull();
      expect(await store.delete(ref, "5", ["a"])).toBe(1);
      await store.deleteAll(ref, "5");
      expect(await store.list(ref)).toEqual([]);
      // A fresh connection's ready check (INFO) passes: ioredis warns of nothing, commands go through.
      const warn = vi.spyOn(console, "warn");
      try {
        const fresh = new RedisDurabilityStore({ redis: env.DURABLE_REDIS_URL! });
        expect(await fresh.epochOf(ref)).toBe("5");
        await fresh.close();
        expect(warn).not.toHaveBeenCalled();
      } finally {
        warn.mockRestore();
      }
    } finally {
      await store.close();
    }
  });

  it("is refused every key of Pinboard's (sessions, the audit trail) and every admin command", async () => {
    const admin = client(adminUrl());
    // What a worker must not reach exists: its session (with the HMAC secret) and audit entries.
    expect(await admin.hlen(keys.sessions)).toBeGreaterThan(0);
    const worker = client(env.DURABLE_REDIS_URL!);
    const refused: Array<[string, ...(string | number)[]]> = [
      ["hgetall", keys.sessions],
      ["hget", keys.sessions, workerProcess!.sessionId],
      ["hset", keys.sessions, "forged", "{}"],
      ["get", keys.bootTime(0)],
      ["hget", keys.workers(0), workerProcess!.sessionId],
      ["del", keys.license],
      ["xadd", keys.audit, "*", "action", "undrain", "by", "alice", "via", "console"],
      ["xrange", keys.audit, "-", "+"],
      ["scan", 0],
      ["keys", "*"],
      ["config", "get", "dir"],
      ["flushall"],
      ["acl", "list"],
      ["acl", "setuser", "pinned", "+@all"],
      ["script", "flush"],
      ["client", "list"],
      ["subscribe", "x"],
      ["shutdown", "nosave"],
      ["eval", "return redis.call('HGETALL', KEYS[1])", 1, keys.sessions],
    ];
    for (const [command, ...args] of refused) {
      await expect(worker.call(command, ...args), `${command} ${args.join(" ")}`).rejects.toThrow(/^NOPERM/);
    }
    // Inside a script Redis checks every command and key too, not only the declared KEYS.
    const inScript = "ERR The user executing the script can't";
    for (const [body, refusal] of [
      [`return redis.call('HGET', '${keys.sessions}', 'x')`, "access at least one of the keys"],
      [`return redis.call('HSET', '${keys.sessions}', 'forged', '{}')`, "access at least one of the keys"],
      [`return redis.call('XADD', '${keys.audit}', '*', 'action', 'undrain')`, "run this command"],
      [`return redis.call('HGETALL', '${durable.instances}')`, "run this command"],
    ] as const) {
      await expect(worker.call("eval", body, 0), body).rejects.toThrow(`${inScript} ${refusal}`);
    }
    // Nothing changed: the audit trail holds no forged entry, the session table no forged session.
    const audit = await admin.xrange(keys.audit, "-", "+");
    expect(audit.map(([, fields]) => fields.join(" ")).join("\n")).not.toContain("alice");
    expect(await admin.hexists(keys.sessions, "forged")).toBe(0);
    // Loopback only, protected mode on; Pinboard's default user takes no connection without its password.
    expect(await admin.config("GET", "protected-mode")).toEqual(["protected-mode", "yes"]);
    expect(await admin.config("GET", "bind")).toEqual(["bind", "127.0.0.1"]);
    const port = readFileSync(join(dir, DEV_STORE_DIR, "port"), "utf8").trim();
    await expect(client(`redis://127.0.0.1:${port}`).get(keys.bootTime(0))).rejects.toThrow(/NOAUTH/);
  });

  it("is what docs/operations.md tells operators to copy, and those lines work on a plain Redis", async () => {
    const docs = readFileSync(new URL("../../../../docs/operations.md", import.meta.url), "utf8");
    const lines = [...docs.matchAll(/^ACL SETUSER .*$/gm)].map((m) => m[0]);
    expect(lines).toEqual([
      `ACL SETUSER pinned on >WORKERS_PASSWORD ${workerAclRules("pinned:")}`,
      "ACL SETUSER default on >PINBOARD_PASSWORD ~* &* +@all",
    ]);
    const plain = await startEmbeddedRedis();
    try {
      const setup = client(plain.url);
      for (const line of lines) await setup.call("acl", ...line.split(" ").slice(1));
      const admin = client(`redis://:PINBOARD_PASSWORD@127.0.0.1:${plain.port}`);
      const store = new RedisDurabilityStore({ redis: `redis://pinned:WORKERS_PASSWORD@127.0.0.1:${plain.port}` });
      try {
        const ref = { ns: "/counter", id: "copied" };
        await store.activate(ref, "1");
        await store.put(ref, "1", [["k", "v"]]);
        await store.setAlarm(ref, "1", 5);
        expect(await admin.zscore(durable.alarms, instanceMember("/counter", "copied"))).toBe("5");
      } finally {
        await store.close();
      }
      await admin.hset(keys.sessions, "s", "{}");
      const worker = client(`redis://pinned:WORKERS_PASSWORD@127.0.0.1:${plain.port}`);
      await expect(worker.hget(keys.sessions, "s")).rejects.toThrow(/^NOPERM/);
      await expect(worker.xadd(keys.audit, "*", "a", "b")).rejects.toThrow(/^NOPERM/);
    } finally {
      await plain.stop();
    }
  });
});
