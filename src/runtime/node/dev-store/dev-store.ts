import { existsSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import type { Config } from "../../../config/config.ts";
import { DEFAULT_DURABLE_PREFIX } from "../../../contract/durable-index.ts";
import type { Logger } from "../../../log/logger.ts";
import { Keys } from "../../../redis/keys.ts";
import { freePort } from "../process/free-port.ts";
import {
  aclConfig,
  type DevStoreUsers,
  loadOrCreateUsers,
  newUsers,
  storeUrl,
  WORKER_USER,
} from "./dev-store-users.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "./embedded-redis.ts";
import { privateDir, readPrivateFile, shownPath, writePrivateFile } from "./private-file.ts";

/** Where a local start keeps the embedded Redis's data and port, under its folder's `.pinboard/`. */
export const DEV_STORE_DIR = join(".pinboard", "redis");
const PORT_FILE = "port";
/** The pid of the process whose redis-server holds the store: one at a time (`npm start` or `npm run dev`). */
const OWNER_FILE = "owner.pid";
/** redis-server's default `appenddirname`: present once a store has been opened with an append-only file. */
const AOF_DIR = "appendonlydir";

export interface DevStore extends EmbeddedRedis {
  /** The workers' URL: the `pinned` user's, limited to the durable store's keys (`url` is Pinboard's). */
  readonly workerUrl: string;
  /** The data folder (append-only file) when the store is kept between starts. */
  readonly dataDir?: string;
  /** True when this start created the store: nothing can have been placed in it before. */
  readonly fresh: boolean;
  /** How the start banner and the log describe it. */
  readonly describe: string;
}

export type DevStoreConfig = Pick<Config, "prefix" | "shards"> & { durable?: Pick<Config["durable"], "prefix"> };

/**
 * The Redis of a start without REDIS_URL: a private redis-server, kept under `<dir>/.pinboard/redis`
 * (append-only file, the same port as last time when it is free) when `dir` is given, else on a
 * free port with nothing on disk. A store this process created is opened with no cold-start
 * window: the window exists so that workers placed before Redis lost its data can re-register
 * first, and a new store had none. Its default user (Pinboard's) and the workers' user have random
 * passwords (dev-store-users.ts), kept beside the data when the store is.
 */
export async function startDevStore(
  config: DevStoreConfig,
  dir: string | undefined,
  log?: Pick<Logger, "warn">,
): Promise<DevStore> {
  const durablePrefix = config.durable?.prefix ?? DEFAULT_DURABLE_PREFIX;
  // The workers' user reaches every key starting with the durable prefix: none may be Pinboard's.
  if (config.prefix.startsWith(durablePrefix))
    throw new Error(
      `PINBOARD_DURABLE_PREFIX ${JSON.stringify(durablePrefix)} is a prefix of PINBOARD_PREFIX ` +
        `${JSON.stringify(config.prefix)}: the workers' Redis user would reach Pinboard's keys; choose prefixes apart`,
    );
  if (dir === undefined) {
    const users = newUsers();
    const embedded = await startWithUsers(users, durablePrefix);
    await openWithoutColdStart(embedded.url, config);
    return { ...embedded, fresh: true, describe: `${described(embedded.port)} (not persisted)` };
  }
  const root = resolve(dir);
  const dataDir = resolve(root, DEV_STORE_DIR);
  await privateDir(dataDir, root);
  await claimStore(dataDir);
  const users = await loadOrCreateUsers(dataDir);
  const fresh = !existsSync(join(dataDir, AOF_DIR));
  const port = await storePort(dataDir, users.admin, log);
  const embedded = await startWithUsers(users, durablePrefix, {
    port,
    args: ["--dir", dataDir, "--appendonly", "yes", "--appendfsync", "everysec"],
  });
  await writePrivateFile(join(dataDir, PORT_FILE), `${port}\n`);
  if (fresh) await openWithoutColdStart(embedded.url, config);
  const kept = `data in ${shownPath(dataDir)}`;
  return {
    ...embedded,
    dataDir,
    fresh,
    describe: `${described(port)} (${kept}, ${fresh ? "new" : "reopened"})`,
  };
}

async function startWithUsers(
  users: DevStoreUsers,
  durablePrefix: string,
  options: { port?: number; args?: string[] } = {},
): Promise<EmbeddedRedis & { workerUrl: string }> {
  const embedded = await startEmbeddedRedis({
    ...options,
    config: aclConfig(users, durablePrefix),
    password: users.admin,
  });
  return { ...embedded, workerUrl: storeUrl(embedded.port, users.worker, WORKER_USER) };
}

/** The store as the banner and the log name it: no password. */
function described(port: number): string {
  return `embedded redis-server at redis://127.0.0.1:${port}`;
}

/** Refuses a store another live process serves; a dead owner's (SIGKILLed) is taken over. */
async function claimStore(dataDir: string): Promise<void> {
  const owner = Number(((await readPrivateFile(join(dataDir, OWNER_FILE))) ?? "").trim());
  if (Number.isInteger(owner) && owner > 0 && owner !== process.pid && isAlive(owner))
    throw new Error(
      `the dev store in ${dataDir} is in use by process ${owner} (another \`npm start\`, \`pinboard serve\` or ` +
        "`npm run dev` in this folder): stop it, share it with REDIS_URL, or start from another folder",
    );
  await writePrivateFile(join(dataDir, OWNER_FILE), `${process.pid}\n`);
}

/**
 * Whether process `pid` exists: signal 0 tests without signalling. EPERM means it exists and
 * belongs to another user (a store's owner started by someone else), so it is alive too.
 */
export function isAlive(
  pid: number,
  kill: (pid: number, signal: 0) => unknown = (p, s) => process.kill(p, s),
): boolean {
  try {
    kill(pid, 0);
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
async function storePort(dataDir: string, password: string, log: Pick<Logger, "warn"> | undefined): Promise<number> {
  const previous = Number(((await readPrivateFile(join(dataDir, PORT_FILE))) ?? "").trim());
  if (!Number.isInteger(previous) || previous <= 0) return freePort();
  const holder = await redisDirOn(previous, password);
  if (holder === undefined) return previous;
  if (holder === dataDir) {
    await shutDown(previous, password);
    return previous;
  }
  const port = await freePort();
  log?.warn(
    `the dev store's port ${previous} is taken by another program: it moves to ${port}; ` +
      "restart running workers with the new DURABLE_REDIS_URL (in .pinboard/dev.env)",
  );
  return port;
}

function probeClient(port: number, password: string | undefined): Redis {
  return new Redis({
    port,
    host: "127.0.0.1",
    ...(password !== undefined ? { password } : {}),
    maxRetriesPerRequest: 0,
    enableReadyCheck: false,
    enableOfflineQueue: true,
    retryStrategy: () => null,
    // Whatever holds the port may never answer RESP.
    connectTimeout: 2000,
    commandTimeout: 2000,
  });
}

/**
 * The data folder of the redis-server on `port`; "" for a program that is not Redis (or a Redis
 * that takes neither no password nor this store's); undefined when the port is free. Asked first
 * without a password: the orphan of a version before the store had one takes none.
 */
async function redisDirOn(port: number, password: string): Promise<string | undefined> {
  if (await portIsFree(port)) return undefined;
  for (const auth of [undefined, password]) {
    const client = probeClient(port, auth);
    client.on("error", () => {});
    try {
      const reply = (await client.config("GET", "dir")) as string[];
      return reply[1] ?? "";
    } catch (err) {
      if (auth === undefined && /NOAUTH/.test(String(err))) continue;
      return "";
    } finally {
      client.disconnect();
    }
  }
  return "";
}

function portIsFree(port: number): Promise<boolean> {
  const probe = createServer();
  return new Promise((resolve) => {
    probe.once("error", () => resolve(false));
    probe.listen({ port, host: "127.0.0.1", exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** SHUTDOWN writes the append-only file out and exits; the connection closing is its answer. */
async function shutDown(port: number, password: string): Promise<void> {
  for (const auth of [undefined, password]) {
    const client = probeClient(port, auth);
    client.on("error", () => {});
    await client.shutdown().catch(() => {});
    client.disconnect();
  }
  const deadline = Date.now() + 10_000;
  while ((await redisDirOn(port, password)) !== undefined) {
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
