/**
 * Reads what the stores hold at the end of a run straight from Redis (trusting no worker's log):
 * every `user:*` list of the user database, and each list's and counter's stored value in the
 * durability store (the layout of src/contract/durable-index.ts: `pinned:{/ns/id}:data`, a hash
 * of storage key → JSON value; the chaos worker keeps a list under "list", a counter under "n").
 */
import { Redis } from "ioredis";
import { DurableKeys } from "../../src/contract/durable-index.ts";
import type { StoredState } from "./history.ts";

const USER_PREFIX = "user:";

export async function readStores(
  userDbUrl: string,
  durableUrl: string,
  keys: { lists: string[]; counters: string[] },
): Promise<StoredState> {
  const userDb = new Redis(userDbUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  const durable = new Redis(durableUrl, { maxRetriesPerRequest: 1, lazyConnect: true });
  try {
    return {
      userDb: await readUserLists(userDb),
      lists: await readDurable<string[]>(durable, keys.lists, "list"),
      counters: await readDurable<number>(durable, keys.counters, "n"),
    };
  } finally {
    userDb.disconnect();
    durable.disconnect();
  }
}

async function readUserLists(redis: Redis): Promise<Record<string, string[]>> {
  const lists: Record<string, string[]> = {};
  let cursor = "0";
  do {
    const [next, names] = await redis.scan(cursor, "MATCH", `${USER_PREFIX}*`, "COUNT", 1000);
    cursor = next;
    for (const name of names) lists[name.slice(USER_PREFIX.length)] = await redis.lrange(name, 0, -1);
  } while (cursor !== "0");
  return lists;
}

async function readDurable<T>(redis: Redis, keys: string[], field: string): Promise<Record<string, T>> {
  const durableKeys = new DurableKeys();
  const values: Record<string, T> = {};
  for (const key of keys) {
    const slash = key.lastIndexOf("/");
    const raw = await redis.hget(durableKeys.data(key.slice(0, slash), key.slice(slash + 1)), field);
    if (raw !== null) values[key] = JSON.parse(raw) as T;
  }
  return values;
}
