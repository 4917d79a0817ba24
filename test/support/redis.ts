import type { Cluster, Redis } from "ioredis";
import { Keys } from "../../src/redis/keys.ts";
import { type EmbeddedRedis, startEmbeddedRedis } from "../../src/runtime/node/dev-store/embedded-redis.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { type RedisCluster, startRedisCluster } from "./redis-cluster.ts";

function testRedisMode(): "single" | "cluster" {
  const mode = process.env.PINBOARD_TEST_REDIS ?? "";
  if (mode === "" || mode === "single") return "single";
  if (mode === "cluster") return "cluster";
  throw new Error(`PINBOARD_TEST_REDIS is "cluster" or "single" (the default), not ${JSON.stringify(mode)}`);
}

/**
 * PINBOARD_TEST_REDIS=cluster (`npm run test:cluster`): every startTestRedis() is a real 3-primary
 * Redis Cluster instead of one redis-server, so the whole suite runs on a cluster.
 */
export const onCluster = testRedisMode() === "cluster";

export interface TestRedis {
  /** The redis-server (on a cluster: its first node, whichever node that is after a restart). */
  readonly server: EmbeddedRedis;
  /** A raw ioredis client for assertions; on a cluster it routes every command by its key. */
  redis: TcpRedis;
  /** redis:// URL of `server`: on a cluster, one node only (use `env` or `clusterNodes`). */
  url: string;
  /** Set on a Redis Cluster: the seed nodes for REDIS_CLUSTER_NODES. */
  clusterNodes?: string;
  /** Set on a Redis Cluster: its nodes, for admin commands, kills and restarts. */
  cluster?: RedisCluster;
  /** How Pinboard reaches this Redis: { REDIS_URL } or { REDIS_CLUSTER_NODES }. */
  env: Record<string, string>;
  /** KEYS on every primary (on a cluster one node's KEYS only sees its own slots). */
  keys(pattern?: string): Promise<string[]>;
  /** One connection per primary, for commands that are per node (EVAL of a keyless script, INFO …). */
  primaries(): Promise<Redis[]>;
  /**
   * Every key with its type and value, sorted: compare two snapshots to prove a request changed
   * nothing. The fleet license and membership are left out: the node renews them on its own
   * schedule (a third of a lease), whatever the request.
   */
  snapshot(): Promise<Record<string, unknown>>;
  /** FLUSHALL on every primary. */
  flush(): Promise<void>;
  /** Stops the redis-server (every node of a cluster), as an outage would; the client stays. */
  stopServer(): Promise<void>;
  /** Stops the server(s) and starts them again, empty, on the same port(s). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A private Redis for one test file, on free ports (never the shared 6379): one redis-server, or
 * with PINBOARD_TEST_REDIS=cluster a 3-primary cluster. `single` keeps one redis-server for what
 * only takes a URL (PINBOARD_DURABLE_REDIS_URL).
 */
export async function startTestRedis(options: { single?: boolean } = {}): Promise<TestRedis> {
  if (onCluster && !options.single) {
    const cluster = await startRedisCluster({ primaries: 3 });
    const t = testRedisOnCluster(cluster);
    const closeClient = t.stop;
    t.stop = async () => {
      // A script that names keys of two slots is refused CROSSSLOT; requests may hide the error
      // behind a retry or a 503, the node's error counter does not.
      const crossSlot = (await cluster.errorStats().catch(() => ({}) as Record<string, number>)).CROSSSLOT ?? 0;
      await closeClient();
      await cluster.stop();
      if (crossSlot > 0) throw new Error(`the cluster refused ${crossSlot} command(s) with CROSSSLOT`);
    };
    return t;
  }
  let server = await startEmbeddedRedis();
  const redis = new TcpRedis({ url: server.url });
  return {
    get server() {
      return server;
    },
    redis,
    url: server.url,
    env: { REDIS_URL: server.url },
    keys: (pattern = "*") => redis.client.keys(pattern),
    primaries: async () => [redis.client as Redis],
    snapshot: () => snapshot(redis, () => redis.client.keys("*")),
    async flush() {
      await redis.client.flushall();
    },
    stopServer: () => server.stop(),
    async restart() {
      await server.stop();
      server = await startEmbeddedRedis({ port: server.port });
    },
    async stop() {
      await redis.close();
      await server.stop();
    },
  };
}

/**
 * The same helpers on a Redis Cluster: commands route by key, and KEYS and FLUSHALL, which only
 * see one node's slots, run on every primary. stop() closes the client only; the caller stops
 * the cluster (startTestRedis() in cluster mode stops both).
 */
export function testRedisOnCluster(cluster: RedisCluster): TestRedis {
  const redis = new TcpRedis({ clusterNodes: cluster.nodes.split(",") });
  const client = redis.client as Cluster;
  const primaries = async () => {
    if (client.status !== "ready") await new Promise<void>((resolve) => client.once("ready", resolve));
    return client.nodes("master");
  };
  const keys = async (pattern = "*") => (await Promise.all((await primaries()).map((n) => n.keys(pattern)))).flat();
  return {
    get server() {
      return cluster.all[0]!.server;
    },
    redis,
    url: cluster.all[0]!.server.url,
    clusterNodes: cluster.nodes,
    cluster,
    env: { REDIS_CLUSTER_NODES: cluster.nodes },
    keys,
    primaries,
    snapshot: () => snapshot(redis, keys),
    flush: () => cluster.flushAll(),
    stopServer: () => cluster.stop(),
    restart: () => cluster.restart(),
    stop: () => redis.close(),
  };
}

/** SCRIPT FLUSH on every primary: the next EVALSHA of any script is NOSCRIPT, wherever it runs. */
/** Ends every bucket's cold-start quarantine, as on a fleet that has been up for a while. */
export async function endColdStart(t: Pick<TestRedis, "redis">, keys: Keys = new Keys("pinboard:", 16)): Promise<void> {
  for (const b of keys.allBuckets()) await t.redis.client.set(keys.bootTime(b), "0");
}

export async function flushScripts(t: TestRedis): Promise<void> {
  await Promise.all((await t.primaries()).map((node) => node.script("FLUSH")));
}

/** SCRIPT LOAD on every primary; the SHA1. */
export async function loadScript(t: TestRedis, body: string): Promise<string> {
  const shas = await Promise.all((await t.primaries()).map((node) => node.script("LOAD", body) as Promise<string>));
  return shas[0]!;
}

/** True when some primary's script cache holds `sha` (the one that ran it). */
export async function scriptCached(t: TestRedis, sha: string): Promise<boolean> {
  const replies = await Promise.all(
    (await t.primaries()).map((node) => node.script("EXISTS", sha) as Promise<number[]>),
  );
  return replies.some(([cached]) => cached === 1);
}

/** What startTestPinboard and startPinboardProcess take: a TestRedis, a URL, or cluster seed nodes. */
export type RedisTarget = string | { url?: string; clusterNodes?: string };

export function redisTargetEnv(target: RedisTarget): Record<string, string> {
  if (typeof target === "string") return { REDIS_URL: target };
  if (target.clusterNodes) return { REDIS_CLUSTER_NODES: target.clusterNodes };
  if (target.url) return { REDIS_URL: target.url };
  throw new Error("a Redis target needs a url or cluster nodes");
}

async function snapshot(redis: TcpRedis, allKeys: () => Promise<string[]>): Promise<Record<string, unknown>> {
  const client = redis.client;
  const keys = (await allKeys()).filter((k) => !/\{global\}:(license|members)$/.test(k)).sort();
  const out: Record<string, unknown> = {};
  for (const key of keys) {
    const type = await client.type(key);
    if (type === "string") out[key] = await client.get(key);
    else if (type === "hash") out[key] = await client.hgetall(key);
    else if (type === "set") out[key] = (await client.smembers(key)).sort();
    else if (type === "zset") out[key] = await client.zrange(key, "0", "-1", "WITHSCORES");
    else if (type === "list") out[key] = await client.lrange(key, 0, -1);
    else out[key] = type;
  }
  return out;
}
