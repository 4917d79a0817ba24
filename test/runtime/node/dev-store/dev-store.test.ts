import { spawn, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterEach, describe, expect, it } from "vitest";
import { Keys } from "../../../../src/redis/keys.ts";
import { DEV_STORE_DIR, type DevStore, startDevStore } from "../../../../src/runtime/node/dev-store/dev-store.ts";
import { startEmbeddedRedis } from "../../../../src/runtime/node/dev-store/embedded-redis.ts";

const config = { prefix: "pinboard:", shards: 4 };
const keys = new Keys(config.prefix, config.shards);
const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "pinboard-dev-store-"));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function open(dir: string | undefined, warnings: string[] = []): Promise<DevStore> {
  const store = await startDevStore(config, dir, { warn: (message) => warnings.push(message) });
  cleanups.push(() => store.stop());
  return store;
}

async function withClient<T>(url: string, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { maxRetriesPerRequest: 0 });
  client.on("error", () => {});
  try {
    return await use(client);
  } finally {
    client.disconnect();
  }
}

const bootTimes = (url: string) =>
  withClient(url, (c) => Promise.all(keys.allBuckets().map((b) => c.get(keys.bootTime(b)))));

/** A pid that belonged to a process which has exited. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.pid))"], { encoding: "utf8" });
  return Number(child.stdout);
}

describe("the dev store (a start without REDIS_URL)", () => {
  it("opens a store it created with no cold-start window: every bucket booted at 0", async () => {
    const store = await open(tempDir());
    expect(store.fresh).toBe(true);
    expect(await bootTimes(store.url)).toEqual(keys.allBuckets().map(() => "0"));
    const memoryOnly = await open(undefined);
    expect(memoryOnly.fresh).toBe(true);
    expect(memoryOnly.describe).toContain("not persisted");
    expect(await bootTimes(memoryOnly.url)).toEqual(keys.allBuckets().map(() => "0"));
  });

  it("keeps its port and its data across a restart, and leaves a reopened store's boot times alone", async () => {
    const dir = tempDir();
    const first = await open(dir);
    await withClient(first.url, async (c) => {
      await c.set("kept", "yes");
      await c.set(keys.bootTime(0), "1234");
    });
    await first.stop();
    const second = await open(dir);
    expect(second.port).toBe(first.port);
    expect(second.fresh).toBe(false);
    expect(second.describe).toContain(`data in ${join(dir, DEV_STORE_DIR)}`);
    expect(await withClient(second.url, (c) => c.get("kept"))).toBe("yes");
    expect((await bootTimes(second.url))[0]).toBe("1234");
  });

  it("takes over the store of a Pinboard that was SIGKILLed: its orphaned redis-server is shut down, its data kept", async () => {
    const dir = tempDir();
    const first = await startDevStore(config, dir);
    await withClient(first.url, (c) => c.set("kept", "yes"));
    // As if the owner had died without stopping its redis-server: a dead pid owns the store.
    writeFileSync(join(dir, DEV_STORE_DIR, "owner.pid"), `${deadPid()}\n`);
    const orphan = first.process;
    cleanups.push(() => void orphan.kill("SIGKILL"));
    const second = await open(dir);
    expect(orphan.exitCode ?? orphan.signalCode).not.toBeNull();
    expect(second.port).toBe(first.port);
    expect(await withClient(second.url, (c) => c.get("kept"))).toBe("yes");
  });

  it("refuses a store another live process serves, naming it and what to do", async () => {
    const dir = tempDir();
    await open(dir);
    const other = spawn("sleep", ["30"]);
    cleanups.push(() => void other.kill("SIGKILL"));
    writeFileSync(join(dir, DEV_STORE_DIR, "owner.pid"), `${other.pid}\n`);
    await expect(startDevStore(config, dir)).rejects.toThrow(
      `the dev store in ${join(dir, DEV_STORE_DIR)} is in use by process ${other.pid}`,
    );
  });

  it("moves to a free port, with a warning naming it, when another program took the old one", async () => {
    const dir = tempDir();
    const first = await open(dir);
    await first.stop();
    const sockets = new Set<Socket>();
    const squatter: Server = createServer((socket) => sockets.add(socket));
    await new Promise<void>((resolve) => squatter.listen(first.port, "127.0.0.1", resolve));
    cleanups.push(() => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => squatter.close(() => resolve()));
    });
    const warnings: string[] = [];
    const second = await open(dir, warnings);
    expect(second.port).not.toBe(first.port);
    expect(warnings).toEqual([
      `the dev store's port ${first.port} is taken by another program: it moves to ${second.port}; ` +
        "restart running workers with the new DURABLE_REDIS_URL (in .pinboard/dev.env)",
    ]);
    expect(readFileSync(join(dir, DEV_STORE_DIR, "port"), "utf8")).toBe(`${second.port}\n`);
  });

  it.for(["owner.pid", "port", "default.password", "pinned.password"])(
    "refuses a symbolic link at .pinboard/redis/%s and writes nothing through it",
    async (name) => {
      const dir = tempDir();
      const dataDir = join(dir, DEV_STORE_DIR);
      mkdirSync(dataDir, { recursive: true });
      const target = join(dir, "victim");
      writeFileSync(target, "untouched\n");
      symlinkSync(target, join(dataDir, name));
      const dangling = join(dir, "never-created");
      await expect(startDevStore(config, dir)).rejects.toThrow(
        `refusing to use ${join(dataDir, name)}: it is a symbolic link (delete it; Pinboard writes its dev files itself)`,
      );
      expect(readFileSync(target, "utf8")).toBe("untouched\n");
      // A link to nowhere is not created through either.
      rmSync(join(dataDir, name));
      symlinkSync(dangling, join(dataDir, name));
      await expect(startDevStore(config, dir)).rejects.toThrow("it is a symbolic link");
      expect(existsSync(dangling)).toBe(false);
    },
  );

  it("refuses a .pinboard folder that is a symbolic link", async () => {
    const dir = tempDir();
    const elsewhere = tempDir();
    symlinkSync(elsewhere, join(dir, ".pinboard"));
    await expect(startDevStore(config, dir)).rejects.toThrow(
      `refusing to use ${join(dir, ".pinboard")}: it is a symbolic link`,
    );
  });

  it("opens a store of a version without passwords: its orphaned redis-server is stopped, the data kept, a password required", async () => {
    const dir = tempDir();
    const dataDir = join(dir, DEV_STORE_DIR);
    mkdirSync(dataDir, { recursive: true });
    // What an older `npm start` left: no password files, its redis-server still running (SIGKILLed owner).
    const old = await startEmbeddedRedis({ args: ["--dir", dataDir, "--appendonly", "yes"] });
    cleanups.push(() => old.stop());
    await withClient(old.url, (c) => c.set("kept", "yes"));
    writeFileSync(join(dataDir, "port"), `${old.port}\n`);
    writeFileSync(join(dataDir, "owner.pid"), `${deadPid()}\n`);
    const store = await open(dir);
    expect(store.port).toBe(old.port);
    expect(store.fresh).toBe(false);
    expect(await withClient(store.url, (c) => c.get("kept"))).toBe("yes");
    await expect(withClient(`redis://127.0.0.1:${store.port}`, (c) => c.get("kept"))).rejects.toThrow(/NOAUTH/);
    expect(readFileSync(join(dataDir, "default.password"), "utf8")).toMatch(/^[0-9a-f]{48}\n$/);
  });

  it.for([
    ["pinned:", "pinned:pinboard:"],
    ["", "pinboard:"],
  ])("refuses a durable prefix %j that Pinboard's keys (prefix %j) start with", async ([durable, prefix]) => {
    await expect(
      startDevStore({ prefix: prefix!, shards: 4, durable: { prefix: durable! } }, undefined),
    ).rejects.toThrow(
      `PINBOARD_DURABLE_PREFIX ${JSON.stringify(durable)} is a prefix of PINBOARD_PREFIX ${JSON.stringify(prefix)}: ` +
        "the workers' Redis user would reach Pinboard's keys; choose prefixes apart",
    );
  });

  it("keeps the users' passwords off redis-server's command line (ps) and out of its description", async () => {
    const dir = tempDir();
    const store = await open(dir);
    const passwords = ["default.password", "pinned.password"].map((f) =>
      readFileSync(join(dir, DEV_STORE_DIR, f), "utf8").trim(),
    );
    // What it was started with (redis-server later rewrites its process title, hiding its arguments).
    const cmdline = store.process.spawnargs.join(" ");
    expect(cmdline).toContain("--appendonly yes");
    for (const password of passwords) {
      expect(cmdline).not.toContain(password);
      expect(store.describe).not.toContain(password);
    }
    expect(store.url).toBe(`redis://:${passwords[0]}@127.0.0.1:${store.port}`);
    expect(store.workerUrl).toBe(`redis://pinned:${passwords[1]}@127.0.0.1:${store.port}`);
  });
});
