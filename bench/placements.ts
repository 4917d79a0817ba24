/**
 * Placements for the bench: the cold-start quarantine (touch every bucket once, then wait one
 * lease), hot ids placed through Pinboard, placement rows written straight into Redis in the
 * resolve script's format (`sessionId \n epoch \n expiry \n hostname \n tag` under
 * `{prefix}{b}:{env}:{ns}:placements`, env `*` in single mode) with pipelined multi-field HSETs,
 * and the Redis memory one row costs (INFO memory used_memory delta / rows).
 */
import { createHash, randomUUID } from "node:crypto";
import type { Redis } from "ioredis";
import { type Keys, SINGLE_ENV } from "../src/redis/keys.ts";
import { usedMemory } from "./redis-stats.ts";

/** Same as Keys.bucketOf, synchronous (node:crypto), for filling many rows quickly. */
export function bucketOf(id: string, shards: number): number {
  return createHash("sha256").update(id).digest().readUInt32BE(0) % shards;
}

/** One id per bucket, `${prefix}-{n}` for the smallest n that lands there. */
export function oneIdPerBucket(prefix: string, shards: number): string[] {
  const ids: (string | undefined)[] = new Array(shards).fill(undefined);
  let missing = shards;
  for (let n = 0; missing > 0; n++) {
    const id = `${prefix}-${n}`;
    const b = bucketOf(id, shards);
    if (ids[b] === undefined) {
      ids[b] = id;
      missing--;
    }
  }
  return ids as string[];
}

/**
 * Starts every bucket's cold-start window now: the first resolve in a bucket sets its
 * boot_time, and new placements there are refused (503) for one lease after it. Returns when
 * the windows end (Redis clock), so callers can run other scenarios meanwhile.
 */
export async function startColdStartWindows(
  pinboardUrl: string,
  ns: string,
  shards: number,
  redis: Redis,
  keys: Keys,
  leaseMs: number,
): Promise<number> {
  await Promise.all(
    oneIdPerBucket("boot", shards).map((id) => fetch(`${pinboardUrl}${ns}/${id}`).then((r) => r.arrayBuffer())),
  );
  let latest = 0;
  for (let b = 0; b < shards; b++) latest = Math.max(latest, Number((await redis.get(keys.bootTime(b))) ?? 0));
  if (latest === 0) throw new Error("no bucket got a boot_time: is the namespace registered?");
  const [sec, usec] = await redis.time();
  const redisNow = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
  return Date.now() + (latest + leaseMs - redisNow);
}

/** Places each id through Pinboard (GET {ns}/{id}) with `concurrency` requests in flight. */
export async function placeThroughPinboard(
  pinboardUrl: string,
  ns: string,
  ids: string[],
  concurrency = 64,
): Promise<void> {
  let next = 0;
  const one = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      for (let attempt = 0; ; attempt++) {
        const res = await fetch(`${pinboardUrl}${ns}/${id}`);
        const body = await res.text();
        if (res.status === 200) break;
        if (attempt >= 50) throw new Error(`placing ${ns}/${id}: ${res.status} ${body}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  };
  await Promise.all(Array.from({ length: concurrency }, one));
}

/**
 * Writes `count` placement rows for fresh random ids (36-character UUIDs) in namespace `ns`,
 * owned round-robin by `sessions`, epoch a microsecond timestamp like the script mints, no
 * wind-down expiry, no hostname, no tag. Rows are grouped per bucket into HSETs of 500 fields,
 * 64 of them pipelined at a time.
 */
export async function fillRows(redis: Redis, keys: Keys, ns: string, count: number, sessions: string[]): Promise<void> {
  const perBucket = new Map<number, string[]>();
  const epochBase = Date.now() * 1000;
  let pending: Promise<unknown>[] = [];
  const flush = async (b: number, args: string[]) => {
    pending.push(redis.hset(keys.placements(b, SINGLE_ENV, ns), ...args));
    if (pending.length >= 64) {
      await Promise.all(pending);
      pending = [];
    }
  };
  for (let i = 0; i < count; i++) {
    const id = randomUUID();
    const b = bucketOf(id, keys.shards);
    const row = `${sessions[i % sessions.length]}\n${epochBase + i}\n\n\n`;
    let args = perBucket.get(b);
    if (!args) perBucket.set(b, (args = []));
    args.push(id, row);
    if (args.length >= 1000) {
      perBucket.set(b, []);
      await flush(b, args);
    }
  }
  for (const [b, args] of perBucket) if (args.length) await flush(b, args);
  await Promise.all(pending);
}

/**
 * Redis memory per placement row: used_memory before and after writing `rows` rows in a
 * namespace of their own, divided by rows (the namespace's hash keys are then deleted).
 */
export async function memoryPerRow(
  redis: Redis,
  keys: Keys,
  rows: number,
  sessions: string[],
): Promise<{ rows: number; bytes: number; bytesPerRow: number; sampleRow: string }> {
  const ns = "/bench-memory";
  const before = await usedMemory(redis);
  await fillRows(redis, keys, ns, rows, sessions);
  const after = await usedMemory(redis);
  const sample = await redis.hrandfield(keys.placements(0, SINGLE_ENV, ns), 1, "WITHVALUES");
  await redis.unlink(...keys.allBuckets().map((b) => keys.placements(b, SINGLE_ENV, ns)));
  return { rows, bytes: after - before, bytesPerRow: (after - before) / rows, sampleRow: JSON.stringify(sample) };
}
