import { Keys, SINGLE_ENV } from "../../src/redis/keys.ts";
import type { TestRedis } from "./redis.ts";

export interface RowFields {
  sessionId: string;
  epoch?: string;
  expiry?: string;
  hostname?: string;
  tag?: string;
}

const keys = new Keys("pinboard:", 16);

/** The key and field of a placement row, as the resolve script writes it. */
export async function rowKey(ns: string, id: string, env = SINGLE_ENV): Promise<string> {
  return keys.placements(await keys.bucketOf(id), env, ns);
}

/** Writes a placement row directly (tests of release, tag and reclaim need rows before resolve). */
export async function putRow(t: TestRedis, ns: string, id: string, row: RowFields, env = SINGLE_ENV): Promise<void> {
  const value = [row.sessionId, row.epoch ?? "", row.expiry ?? "", row.hostname ?? "", row.tag ?? ""].join("\n");
  await t.redis.client.hset(await rowKey(ns, id, env), id, value);
}

export async function getRow(t: TestRedis, ns: string, id: string, env = SINGLE_ENV): Promise<RowFields | null> {
  const raw = await t.redis.hget(await rowKey(ns, id, env), id);
  if (raw === null) return null;
  const [sessionId = "", epoch = "", expiry = "", hostname = "", ...tag] = raw.split("\n");
  return { sessionId, epoch, expiry, hostname, tag: tag.join("\n") };
}

/**
 * Writes many placement rows of one namespace at once, with the bucket's space entry: one
 * pipeline per bucket, since a Redis Cluster refuses a pipeline whose keys span slots.
 */
export async function putRows(
  t: TestRedis,
  ns: string,
  rows: Array<{ id: string; row: RowFields }>,
  env = SINGLE_ENV,
): Promise<void> {
  const byBucket = new Map<number, Array<{ id: string; row: RowFields }>>();
  for (const entry of rows) {
    const bucket = keys.bucketOf(entry.id);
    const list = byBucket.get(bucket);
    if (list) list.push(entry);
    else byBucket.set(bucket, [entry]);
  }
  await Promise.all(
    [...byBucket].map(([bucket, list]) => {
      const writes = t.redis.client.pipeline();
      for (const { id, row } of list)
        writes.hset(
          keys.placements(bucket, env, ns),
          id,
          [row.sessionId, row.epoch ?? "", row.expiry ?? "", row.hostname ?? "", row.tag ?? ""].join("\n"),
        );
      writes.sadd(keys.spaces(bucket), `${env}\n${ns}`);
      return writes.exec();
    }),
  );
}
