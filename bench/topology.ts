/**
 * The processes of one bench run, each on its own so /proc can account them apart:
 *   - an embedded redis-server (src/runtime/node/dev-store/embedded-redis.ts, as `npm start` runs one);
 *   - one Pinboard Node entry (bench/pinboard-main.ts → startNode), compiled like `npm start` runs it;
 *   - worker fleets (bench/fleet-main.ts): the base fleet serving /hot and /new, and later the
 *     large fleet that brings /new to --workers live workers;
 *   - the baselines in front of the base fleet's first worker: the plain node:http proxy
 *     (bench/plain-proxy-main.ts) and, when installed, nginx (bench/nginx.ts).
 * Ports are chosen up front so Pinboard, the base fleet and the plain proxy start side by side.
 */
import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { Redis } from "ioredis";
import { startNodeFlags } from "../bin/node-flags.mjs";
import { mintCredential } from "../src/auth/mint.ts";
import { Keys } from "../src/redis/keys.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../src/runtime/node/dev-store/embedded-redis.ts";
import { freePort } from "../src/runtime/node/process/free-port.ts";
import { type Child, killWhenBenchDies, ROOT, spawnNode } from "./children.ts";
import { nginxVersion, type RunningNginx, startNginx } from "./nginx.ts";

export const PREFIX = "pinboard:";
export const SHARDS = 16;
/** The production default lease; the cold-start quarantine lasts one lease. */
export const LEASE_MS = 15_000;
export const BALANCE_FACTOR = 2;
/** Compiled by `npm run build` (the prebench step), as `npm start` runs Pinboard: no tsx loader. */
const PINBOARD_MAIN = "dist/bench/pinboard-main.js";

export interface FleetWorker {
  clientId: string;
  sessionId: string;
  advertiseUrl: string;
  secret: string;
}

export interface Fleet {
  child: Child;
  url: string;
  /** The workers that registered (fewer than asked when the budget ran out). */
  workers: FleetWorker[];
  requested: number;
  registerSeconds: number;
}

export interface FleetOptions {
  /** Port of the fleet's HTTP server; any free one when absent. */
  port?: number;
  onProgress?: (registered: number, seconds: number) => void;
  /** After this long, stop registering more workers and go with those registered. */
  budgetMs?: number;
  /** Fail when no worker registers for this long. */
  stallMs?: number;
}

export interface Topology {
  redis: EmbeddedRedis;
  admin: Redis;
  keys: Keys;
  secret: string;
  credential: string;
  pinboard: { child: Child; url: string; pid: number };
  base: Fleet;
  /** The plain node:http proxy in front of the base fleet's worker 0. */
  plain: { child: Child; url: string };
  /** The same proxy running one resolve script per request first (bench/resolve-proxy-main.ts). */
  plainResolve: { child: Child; url: string };
  /** nginx in front of the same worker; null when nginx is not installed. */
  nginx: RunningNginx | null;
  /** Starts another fleet and waits until its workers registered (or its budget ran out). */
  startFleet(name: string, count: number, namespaces: string[], options?: FleetOptions): Promise<Fleet>;
  stop(): Promise<void>;
}

/** The Pinboard settings shared by the Node entry and the Workers entry. */
export function pinboardSettings(secret: string): Record<string, string> {
  return {
    PINBOARD_PASSPORT_SECRET: secret,
    PINBOARD_PREFIX: PREFIX,
    PINBOARD_SHARDS: String(SHARDS),
    PINBOARD_LEASE_TTL_MS: String(LEASE_MS),
    PINBOARD_BALANCE_FACTOR: String(BALANCE_FACTOR),
    PINBOARD_LOG_LEVEL: "warn",
  };
}

export async function startTopology(base: { workers: number; namespaces: string[] }): Promise<Topology> {
  const nginxInstalled = nginxVersion();
  const redis = await startEmbeddedRedis();
  killWhenBenchDies(redis.process.pid!);
  const admin = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  admin.on("error", () => {});
  const secret = randomBytes(24).toString("hex");
  const children: Child[] = [];
  let nginx: RunningNginx | null = null;
  const credential = await mintCredential({
    secret,
    sub: "bench",
    scopes: ["pinboard:worker"],
    pinboard: { namespaces: ["*"], allowedBackendHosts: ["127.0.0.1"] },
    ttlSeconds: 4 * 3600,
  });
  const [pinboardPort, basePort] = [await freePort(), await freePort()];
  const pinboardUrl = `http://127.0.0.1:${pinboardPort}`;

  async function startFleet(
    name: string,
    count: number,
    namespaces: string[],
    options: FleetOptions = {},
  ): Promise<Fleet> {
    const child = spawnNode(name, "bench/fleet-main.ts", {
      PINBOARD_URL: pinboardUrl,
      BENCH_CREDENTIAL: credential,
      BENCH_WORKERS: String(count),
      BENCH_NAMESPACES: namespaces.join(","),
      BENCH_CLIENT_PREFIX: name,
      BENCH_PORT: String(options.port ?? 0),
    });
    children.push(child);
    const budget =
      options.budgetMs === undefined ? undefined : setTimeout(() => child.send("enough"), options.budgetMs);
    try {
      for (;;) {
        type Msg = { bench: string; url: string; workers: FleetWorker[]; registered: number; seconds: number };
        const msg = await child.next<Msg>(
          (m) => m.bench === "ready" || m.bench === "progress",
          options.stallMs ?? 120_000,
        );
        if (msg.bench === "progress") {
          options.onProgress?.(msg.registered, msg.seconds);
          continue;
        }
        return { child, url: msg.url, workers: msg.workers, requested: count, registerSeconds: msg.seconds };
      }
    } finally {
      clearTimeout(budget);
    }
  }

  const stop = async () => {
    await nginx?.stop();
    await Promise.all(children.map((c) => c.stop()));
    admin.disconnect();
    await redis.stop();
  };

  try {
    // e.g. BENCH_PINBOARD_NODE_ARGS="--trace-gc" to look into the Pinboard process.
    const nodeArgs = [
      ...startNodeFlags(),
      ...(process.env.BENCH_PINBOARD_NODE_ARGS ?? "").split(/\s+/).filter(Boolean),
    ];
    if (!existsSync(join(ROOT, PINBOARD_MAIN)))
      throw new Error(`${PINBOARD_MAIN} is missing: run \`npm run build\` (npm run bench does)`);
    const pinboardChild = spawnNode(
      "pinboard",
      PINBOARD_MAIN,
      {
        PORT: String(pinboardPort),
        HOST: "127.0.0.1",
        REDIS_URL: redis.url,
        ...pinboardSettings(secret),
        ...heapProfileEnv(),
      },
      nodeArgs,
    );
    children.push(pinboardChild);
    const upstream = `http://127.0.0.1:${basePort}/w0`;
    const plainChild = spawnNode("plain-proxy", "bench/plain-proxy-main.ts", { BENCH_UPSTREAM: upstream });
    children.push(plainChild);
    const resolveChild = spawnNode("resolve-proxy", "bench/resolve-proxy-main.ts", {
      BENCH_UPSTREAM: upstream,
      REDIS_URL: redis.url,
      ...pinboardSettings(secret),
    });
    children.push(resolveChild);
    const [, baseFleet, plainReady, resolveReady] = await Promise.all([
      pinboardChild.next((m) => m.bench === "ready", 60_000),
      startFleet("base", base.workers, base.namespaces, { port: basePort }),
      plainChild.next<{ url: string }>((m) => m.bench === "ready", 60_000),
      resolveChild.next<{ url: string }>((m) => m.bench === "ready", 60_000),
    ]);
    if (nginxInstalled !== null) nginx = await startNginx(upstream, nginxInstalled);
    return {
      redis,
      admin,
      keys: new Keys(PREFIX, SHARDS),
      secret,
      credential,
      pinboard: { child: pinboardChild, url: pinboardUrl, pid: pinboardChild.pid },
      base: baseFleet,
      plain: { child: plainChild, url: plainReady.url },
      plainResolve: { child: resolveChild, url: resolveReady.url },
      nginx,
      startFleet,
      stop,
    };
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
}

/** BENCH_PINBOARD_HEAP_PROFILE=<file>: Pinboard samples its allocations (collected ones too) into that file. */
function heapProfileEnv(): Record<string, string> {
  const file = process.env.BENCH_PINBOARD_HEAP_PROFILE;
  const minor = process.env.BENCH_PINBOARD_HEAP_MINOR;
  return file ? { BENCH_PINBOARD_HEAP_PROFILE: file, ...(minor ? { BENCH_PINBOARD_HEAP_MINOR: minor } : {}) } : {};
}
