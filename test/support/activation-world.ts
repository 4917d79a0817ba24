/**
 * The real side of the single-activation property test (test/placement/single-activation.property.test.ts):
 * one private Redis (a cluster under PINBOARD_TEST_REDIS=cluster) that can be flushed or stopped and
 * started again on its port(s), two
 * in-process Pinboard nodes sharing it, three challenge-server workers, and the "clock" that the
 * test drives by rewriting stored expiries (see the test file for why).
 */
import { Keys } from "../../src/redis/keys.ts";
import type { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { type ChallengeServer, startChallengeServer } from "./challenge-server.ts";
import { credential, startTestPinboard, type TestPinboard } from "./pinboard-app.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";

export const NS = "/threads";
export const PREFIX = "pinboard:";
export const SHARDS = 4;
/**
 * One lease is a minute of real time, far longer than any run: nothing expires by itself while a
 * run executes, so every expiry is a deliberate clock step and the model always knows who is live.
 */
export const LEASE = 60_000;
/** Six ids over the four buckets, two pairs sharing a bucket (a, b → 2; c, d → 3; f → 0; g → 1). */
export const IDS = ["a", "b", "c", "d", "f", "g"] as const;
export const WORKERS = 3;
/** A sessionId that never exists. */
export const UNKNOWN_SESSION = "f".repeat(32);

export const keys = new Keys(PREFIX, SHARDS);
export const clientIdOf = (w: number) => `w${w}`;

export interface World {
  redis: TestRedis;
  admin: TcpRedis;
  nodes: [TestPinboard, TestPinboard];
  workers: ChallengeServer[];
  workerToken: string;
  operatorToken: string;
  /** id → bucket, computed once. */
  bucketOf: Map<string, number>;
  /** FLUSHALL: Redis restarted empty, the cheap way. */
  flush(): Promise<void>;
  /** Stops Redis and starts it again empty on the same port(s); waits for every client. */
  restart(): Promise<void>;
  close(): Promise<void>;
}

export async function startWorld(): Promise<World> {
  const redis = await startTestRedis();
  const admin = redis.redis;
  const env = { PINBOARD_LEASE_TTL_MS: String(LEASE), PINBOARD_SHARDS: String(SHARDS), PINBOARD_PREFIX: PREFIX };
  const nodes: [TestPinboard, TestPinboard] = [
    await startTestPinboard(redis, env),
    await startTestPinboard(redis, env),
  ];
  const workers: ChallengeServer[] = [];
  for (let w = 0; w < WORKERS; w++) workers.push(await startChallengeServer(`secret-of-worker-${w}-0123456789`));
  const bucketOf = new Map<string, number>();
  for (const id of IDS) bucketOf.set(id, await keys.bucketOf(id));

  const reachable = async () => {
    const deadline = Date.now() + 15_000;
    for (const probe of [
      () => admin.timeMs(),
      () => nodes[0].deps.redis.timeMs(),
      () => nodes[1].deps.redis.timeMs(),
    ]) {
      for (;;) {
        try {
          await probe();
          break;
        } catch (err) {
          if (Date.now() > deadline) throw new Error(`redis did not come back: ${String(err)}`);
          await new Promise((r) => setTimeout(r, 25));
        }
      }
    }
  };

  // A run the property's time budget cut short may leave its restart going on behind the next
  // test (a loaded machine): whatever comes next waits for it first.
  let restarting: Promise<void> = Promise.resolve();
  return {
    redis,
    admin,
    nodes,
    workers,
    workerToken: await credential("pinboard:worker"),
    operatorToken: await credential("pinboard:operator"),
    bucketOf,
    async flush() {
      await restarting.catch(() => {});
      await redis.flush();
    },
    async restart() {
      await restarting.catch(() => {});
      restarting = (async () => {
        await redis.restart();
        await reachable();
      })();
      await restarting;
    },
    async close() {
      await Promise.all(workers.map((w) => w.close()));
      await Promise.all(nodes.map((n) => n.close()));
      await redis.stop();
    },
  };
}

// ── the clock ──────────────────────────────────────────────────────────────────────────────

/** Redis TIME in ms: the one clock every script reads. */
export const redisNow = (world: World) => world.admin.timeMs();

/**
 * Moves one session's lease to `expiry` everywhere a script reads it: the fleet-wide record and
 * the bucket mirrors with their expiry indexes (liveness, pruning) and the namespace-list entries
 * (candidates).
 * Equivalent to the worker missing its heartbeats while the clock ran past its lease.
 */
export async function setSessionExpiry(world: World, sessionId: string, expiry: number): Promise<void> {
  const c = world.admin.client;
  const rewrite = async (key: string, index: string) => {
    const raw = await c.hget(key, sessionId);
    if (raw === null) return;
    const rec = JSON.parse(raw) as { expiry: number };
    rec.expiry = expiry;
    await c.hset(key, sessionId, JSON.stringify(rec));
    await c.zadd(index, expiry, sessionId);
  };
  await rewrite(keys.sessions, keys.sessionExpiries);
  for (const b of keys.allBuckets()) {
    await rewrite(keys.workers(b), keys.workerExpiries(b));
    const list = keys.nsWorkers(b, "", NS);
    const entry = await c.hget(list, sessionId);
    if (entry !== null) await c.hset(list, sessionId, `${expiry}${entry.slice(entry.indexOf("\n"))}`);
    // Edited behind the scripts' back: drop the summary so the list's indexes are rebuilt.
    await c.del(keys.nsSummary(b, "", NS));
  }
}

/** Ends every bucket's cold-start quarantine: as if the fleet had been up for a lease. */
export async function endColdStart(world: World): Promise<void> {
  const now = await redisNow(world);
  for (const b of keys.allBuckets()) await world.admin.client.set(keys.bootTime(b), String(now - LEASE - 1));
}

/** Rewrites a placement row's wind-down expiry (the clock running past a wind-down deadline). */
export async function setRowExpiry(world: World, id: string, expiry: string): Promise<boolean> {
  const key = keys.placements(world.bucketOf.get(id)!, "*", NS);
  const raw = await world.admin.client.hget(key, id);
  if (raw === null) return false;
  const f = raw.split("\n");
  f[2] = expiry;
  await world.admin.client.hset(key, id, f.join("\n"));
  return true;
}

/** Moves a timed drain's deadline to `at` (keeping the key's TTL); false for a cordon or none. */
export async function setDrainDeadline(world: World, clientId: string, at: number): Promise<boolean> {
  const key = keys.drain(clientId);
  const value = await world.admin.client.get(key);
  if (value === null || !/^\d+$/.test(value)) return false;
  await world.admin.client.set(key, String(at), "KEEPTTL");
  return true;
}

// ── reading the world back ─────────────────────────────────────────────────────────────────

export interface StoredRecord {
  sessionId: string;
  clientId: string;
  expiry: number;
  draining: boolean;
  selfDraining: boolean;
  degradedSince?: number | null;
}

export interface WorldState {
  now: number;
  records: Map<string, StoredRecord>;
  /** clientId → "account\nsessionId" */
  clientOwners: Record<string, string>;
  /** clientId → its drain key ("cordon", or a timed drain's deadline in ms), null without one */
  drains: Record<string, string | null>;
  /** bucket → sessionId → mirror */
  mirrors: Map<number, Map<string, StoredRecord>>;
  /** bucket → sessionId → "expiry\nheadroom\nflags" */
  lists: Map<number, Record<string, string>>;
  /** id → raw row (only ids of IDS; any other field is reported as `extra`) */
  rows: Map<string, string>;
  extraRows: string[];
}

export async function readWorld(world: World): Promise<WorldState> {
  const c = world.admin.client;
  const now = await redisNow(world);
  const parse = (h: Record<string, string>) =>
    new Map(Object.entries(h).map(([k, v]) => [k, JSON.parse(v) as StoredRecord]));
  const records = parse(await c.hgetall(keys.sessions));
  const clientOwners = await c.hgetall(keys.clientOwners);
  const drains: Record<string, string | null> = {};
  for (let w = 0; w < WORKERS; w++) drains[clientIdOf(w)] = await c.get(keys.drain(clientIdOf(w)));
  const mirrors = new Map<number, Map<string, StoredRecord>>();
  const lists = new Map<number, Record<string, string>>();
  const rows = new Map<string, string>();
  const extraRows: string[] = [];
  for (const b of keys.allBuckets()) {
    mirrors.set(b, parse(await c.hgetall(keys.workers(b))));
    lists.set(b, await c.hgetall(keys.nsWorkers(b, "", NS)));
    const placed = await c.hgetall(keys.placements(b, "*", NS));
    for (const [id, raw] of Object.entries(placed)) {
      if ((IDS as readonly string[]).includes(id) && world.bucketOf.get(id) === b) rows.set(id, raw);
      else extraRows.push(`${b}/${id}`);
    }
  }
  return { now, records, clientOwners, drains, mirrors, lists, rows, extraRows };
}

/** Every key with its value (license and membership left out: nodes renew them on their own). */
export const keyspace = (world: World): Promise<Record<string, unknown>> => world.redis.snapshot();
