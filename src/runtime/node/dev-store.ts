import { existsSync } from "node:fs";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join, relative, resolve, sep } from "node:path";
import { Redis } from "ioredis";
import type { Config } from "../../config.ts";
import type { Logger } from "../../log.ts";
import { Keys } from "../../redis/keys.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "./embedded-redis.ts";
import { freePort } from "./free-port.ts";

/** Where a local start keeps the embedded Redis's data and port, under its folder's `.pinboard/`. */
export const DEV_STORE_DIR = join(".pinboard", "redis");
const PORT_FILE = "port";
/** The pid of the process whose redis-server holds the store: one at a time (`npm start` or `npm run dev`). */
const OWNER_FILE = "owner.pid";
/** redis-server's default `appenddirname`: present once a store has been opened with an append-only file. */
const AOF_DIR = "appendonlydir";

export interface DevStore extends EmbeddedRedis {
  /** The data folder (append-only file) when the store is kept between starts. */
  readonly dataDir?: string;
  /** True when this start created the store: nothing can have been placed in it before. */
  readonly fresh: boolean;
  /** How the start banner and the log describe it. */
  readonly describe: string;
}

export type DevStoreConfig = Pick<Config, "prefix" | "shards">;

/**
 * The Redis of a start without REDIS_URL: a private redis-server, kept under `<dir>/.pinboard/redis`
 * (append-only file, the same port as last time when it is free) when `dir` is given, else on a
 * free port with nothing on disk. A store this process created is opened with no cold-start
 * window: the window exists so that workers placed before Redis lost its data can re-register
 * first, and a new store had none.
 */
export async function startDevStore(
  config: DevStoreConfig,
  dir: string | undefined,
  log?: Pick<Logger, "warn">,
): Promise<DevStore> {
  if (dir === undefined) {
    const embedded = await startEmbeddedRedis();
    await openWithoutColdStart(embedded.url, config);
    return { ...embedded, fresh: true, describe: `embedded redis-server at ${embedded.url} (not persisted)` };
  }
  const dataDir = resolve(dir, DEV_STORE_DIR);
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  await claimStore(dataDir);
  const fresh = !existsSync(join(dataDir, AOF_DIR));
  const port = await storePort(dataDir, log);
  const embedded = await startEmbeddedRedis({
    port,
    args: ["--dir", dataDir, "--appendonly", "yes", "--appendfsync", "everysec"],
  });
  await writeFile(join(dataDir, PORT_FILE), `${port}\n`);
  if (fresh) await openWithoutColdStart(embedded.url, config);
  const kept = `data in ${shortPath(dataDir)}`;
  return {
    ...embedded,
    dataDir,
    fresh,
    describe: `embedded redis-server at ${embedded.url} (${kept}, ${fresh ? "new" : "reopened"})`,
  };
}

/** A path under the working folder relative to it (what the banner shows for `npm start`), any other absolute. */
function shortPath(path: string): string {
  const cwd = process.cwd();
  return path.startsWith(cwd + sep) ? relative(cwd, path) : path;
}

/** Refuses a store another live process serves; a dead owner's (SIGKILLed) is taken over. */
async function claimStore(dataDir: string): Promise<void> {
  const owner = Number((await readFile(join(dataDir, OWNER_FILE), "utf8").catch(() => "")).trim());
  if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner))
    throw new Error(
      `the dev store in ${dataDir} is in use by process ${owner} (another \`npm start\`, \`pinboard serve\` or ` +
        "`npm run dev` in this folder): stop it, share it with REDIS_URL, or start from another folder",
    );
  await writeFile(join(dataDir, OWNER_FILE), `${process.pid}\n`);
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * The port the store had last time, so that running workers' DURABLE_REDIS_URL stays right across
 * a restart; a redis-server of this same store still on it (its Pinboard was SIGKILLed) is shut
 * down first. Another program on the port moves the store to a free one, with a warning.
 */
async function storePort(dataDir: string, log: Pick<Logger, "warn"> | undefined): Promise<number> {
  const previous = Number((await readFile(join(dataDir, PORT_FILE), "utf8").catch(() => "")).trim());
  if (!Number.isInteger(previous) || previous <= 0) return freePort();
  const holder = await redisDirOn(previous);
  if (holder === undefined) return previous;
  if (holder === dataDir) {
    await shutDown(previous);
    return previous;
  }
  const port = await freePort();
  log?.warn(
    `the dev store's port ${previous} is taken by another program: it moves to ${port}; ` +
      `restart running workers with DURABLE_REDIS_URL=redis://127.0.0.1:${port}`,
  );
  return port;
}

function probeClient(port: number): Redis {
  return new Redis({
    port,
    host: "127.0.0.1",
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
    enableOfflineQueue: true,
    retryStrategy: () => null,
    // Whatever holds the port may never answer RESP.
    connectTimeout: 2000,
    commandTimeout: 2000,
  });
}

/** The data folder of the redis-server on `port`; "" for a program that is not Redis; undefined when the port is free. */
async function redisDirOn(port: number): Promise<string | undefined> {
  if (await portIsFree(port)) return undefined;
  const client = probeClient(port);
  client.on("error", () => {});
  try {
    const reply = (await client.config("GET", "dir")) as string[];
    return reply[1] ?? "";
  } catch {
    return "";
  } finally {
    client.disconnect();
  }
}

function portIsFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen({ port, host: "127.0.0.1", exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** SHUTDOWN writes the append-only file out and exits; the connection closing is its answer. */
async function shutDown(port: number): Promise<void> {
  const client = probeClient(port);
  client.on("error", () => {});
  await client.shutdown().catch(() => {});
  client.disconnect();
  const deadline = Date.now() + 10_000;
  while ((await redisDirOn(port)) !== undefined) {
    if (Date.now() > deadline) throw new Error(`the dev store's old redis-server on port ${port} does not stop`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Marks every bucket as booted long ago (0), so that no new placement waits out a cold start. */
async function openWithoutColdStart(url: string, config: DevStoreConfig): Promise<void> {
  const keys = new Keys(config.prefix, config.shards);
  const client = new Redis(url, { maxRetriesPerRequest: 0 });
  try {
    const pipeline = client.pipeline();
    for (const bucket of keys.allBuckets()) pipeline.set(keys.bootTime(bucket), "0", "NX");
    await pipeline.exec();
  } finally {
    client.disconnect();
  }
}
