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
