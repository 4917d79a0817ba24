import type { TestRedis } from "./redis.ts";

/**
 * The whole keyspace in one round trip: key → sha1 of its type and canonical content (hash
 * fields and set members sorted, so that a dict rehash, which reorders a DUMP, is no change)
 * plus whether it carries a TTL. Two digests are equal exactly when no key was added, removed,
 * rewritten with other content or given/stripped of an expiry. Like TestRedis.snapshot(), it
 * leaves out the fleet license and membership, which a node renews on its own schedule. Meant
 * for property tests that compare the keyspace around every one of hundreds of requests, where
 * snapshot()'s round trips per key cost too much.
 */
const SCRIPT = `
local function canonical(key, kind)
  if kind == 'string' then return redis.call('GET', key) end
  local items
  if kind == 'hash' then
    local flat = redis.call('HGETALL', key)
    items = {}
    for i = 1, #flat, 2 do items[#items + 1] = string.len(flat[i]) .. ':' .. flat[i] .. '=' .. flat[i + 1] end
    table.sort(items)
  elseif kind == 'set' then
    items = redis.call('SMEMBERS', key)
    table.sort(items)
  elseif kind == 'zset' then
    items = redis.call('ZRANGE', key, 0, -1, 'WITHSCORES')
  elseif kind == 'list' then
    items = redis.call('LRANGE', key, 0, -1)
  else
    return redis.sha1hex(redis.call('DUMP', key))
  end
  return table.concat(items, '\\0')
end
local out = {}
for _, key in ipairs(redis.call('KEYS', '*')) do
  if not string.find(key, '{global}:license', 1, true) and not string.find(key, '{global}:members', 1, true) then
    local kind = redis.call('TYPE', key).ok
    local ttl = redis.call('PTTL', key)
    if ttl ~= -2 then
      out[#out + 1] = key
      out[#out + 1] = kind .. ':' .. redis.sha1hex(canonical(key, kind)) .. (ttl >= 0 and ':ttl' or '')
    end
  end
end
return out
`;

/** A keyless script on every primary, replies concatenated: on a cluster each sees its own slots. */
async function onEveryPrimary(t: TestRedis, script: string, ...args: string[]): Promise<string[]> {
  const replies = await Promise.all(
    (await t.primaries()).map((node) => node.eval(script, 0, ...args) as Promise<string[]>),
  );
  return replies.flat();
}

export async function keyspaceDigest(t: TestRedis): Promise<Record<string, string>> {
  const flat = await onEveryPrimary(t, SCRIPT);
  const out: Record<string, string> = {};
  for (let i = 0; i < flat.length; i += 2) out[flat[i]!] = flat[i + 1]!;
  return out;
}

/** The keys whose digest differs between two snapshots (added, removed or changed). */
export function changedKeys(before: Record<string, string>, after: Record<string, string>): string[] {
  const keys = new Set([...Object.keys(before), ...Object.keys(after)]);
  return [...keys].filter((k) => before[k] !== after[k]).sort();
}

/** Every field of every hash whose key matches ARGV[1]: key, field, value (or its sha1 when ARGV[2] is "1"). */
const HASH_FIELDS = `
local out = {}
for _, key in ipairs(redis.call('KEYS', ARGV[1])) do
  if redis.call('TYPE', key).ok == 'hash' then
    local flat = redis.call('HGETALL', key)
    for i = 1, #flat, 2 do
      out[#out + 1] = key
      out[#out + 1] = flat[i]
      out[#out + 1] = ARGV[2] == '1' and redis.sha1hex(flat[i + 1]) or flat[i + 1]
    end
  end
end
return out
`;

/** "key field" → value (or its sha1) of every hash field whose key matches `pattern`, on every primary. */
async function hashFields(t: TestRedis, pattern: string, hashed: boolean): Promise<Map<string, string>> {
  const flat = await onEveryPrimary(t, HASH_FIELDS, pattern, hashed ? "1" : "0");
  const out = new Map<string, string>();
  for (let i = 0; i < flat.length; i += 3) out.set(`${flat[i]} ${flat[i + 1]}`, flat[i + 2]!);
  return out;
}

/** Every field of every fleet-wide ({global}) hash: "key field" → sha1 of the value. */
export function globalHashFields(t: TestRedis): Promise<Map<string, string>> {
  return hashFields(t, "*{global}:*", true);
}

/** True when `after` only lost fields of `before` (a prune), none added or rewritten. */
export function onlyRemovals(before: Map<string, string>, after: Map<string, string>): boolean {
  for (const [field, value] of after) if (before.get(field) !== value) return false;
  return true;
}

/** Every entry of every namespace list (`…{bucket}:nsw:{hostname}{ns}`): "key sessionId" → entry. */
export function namespaceListEntries(t: TestRedis): Promise<Map<string, string>> {
  return hashFields(t, "*:nsw:*", false);
}

/** `pinboard:{13}:nse:/threads` → its bucket's key prefix `pinboard:{13}` and the list key `pinboard:{13}:nsw:/threads`. */
const NS_LIST_KEY = /^([^{]*\{\d+\}):ns[esw]:(.*)$/;

/**
 * True when `key` is part of a namespace list (entries, expiry index or summary) that only lost
 * entries of sessions whose mirror in the bucket is gone: the lazy repair a resolve makes of a
 * list entry left by a session that re-registered with other namespaces, whatever it answers.
 */
export async function onlyOrphanedListEntriesDropped(
  t: TestRedis,
  key: string,
  before: Map<string, string>,
  after: Map<string, string>,
): Promise<boolean> {
  const m = NS_LIST_KEY.exec(key);
  if (!m) return false;
  const list = `${m[1]}:nsw:${m[2]}`;
  const entries = (map: Map<string, string>) =>
    new Map([...map].filter(([k]) => k.startsWith(`${list} `)).map(([k, v]) => [k.slice(list.length + 1), v]));
  const was = entries(before);
  const now = entries(after);
  for (const [sid, entry] of now) if (was.get(sid) !== entry) return false;
  const dropped = [...was.keys()].filter((sid) => !now.has(sid));
  if (dropped.length === 0) return false;
  for (const sid of dropped) if ((await t.redis.client.hexists(`${m[1]}:workers`, sid)) === 1) return false;
  return true;
}

/** Every string Redis holds on every primary: key names, values, hash fields, set and zset members, stream entries. */
export async function everyStoredString(t: TestRedis): Promise<string[]> {
  const out: string[] = [];
  for (const node of await t.primaries()) {
    for (const key of await node.keys("*")) {
      out.push(key);
      const type = await node.type(key);
      if (type === "string") out.push((await node.get(key)) ?? "");
      else if (type === "hash") out.push(...Object.entries(await node.hgetall(key)).flat());
      else if (type === "set") out.push(...(await node.smembers(key)));
      else if (type === "zset") out.push(...(await node.zrange(key, "0", "-1")));
      else if (type === "list") out.push(...(await node.lrange(key, 0, -1)));
      else if (type === "stream") for (const [id, fields] of await node.xrange(key, "-", "+")) out.push(id, ...fields);
      // "none": the key went away between KEYS and TYPE (the fleet keeps writing).
      else if (type !== "none") throw new Error(`${key}: a ${type} this scan does not read`);
    }
  }
  return out;
}
