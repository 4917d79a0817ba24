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
async function onEveryPrimary(t: TestRedis, script: string): Promise<string[]> {
  const replies = await Promise.all((await t.primaries()).map((node) => node.eval(script, 0) as Promise<string[]>));
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

const GLOBAL_FIELDS = `
local out = {}
for _, key in ipairs(redis.call('KEYS', '*{global}:*')) do
  if redis.call('TYPE', key).ok == 'hash' then
    local flat = redis.call('HGETALL', key)
    for i = 1, #flat, 2 do
      out[#out + 1] = key
      out[#out + 1] = flat[i]
      out[#out + 1] = redis.sha1hex(flat[i + 1])
    end
  end
end
return out
`;

/** Every field of every fleet-wide ({global}) hash: "key field" → sha1 of the value. */
export async function globalHashFields(t: TestRedis): Promise<Map<string, string>> {
  const flat = await onEveryPrimary(t, GLOBAL_FIELDS);
  const out = new Map<string, string>();
  for (let i = 0; i < flat.length; i += 3) out.set(`${flat[i]} ${flat[i + 1]}`, flat[i + 2]!);
  return out;
}

/** True when `after` only lost fields of `before` (a prune), none added or rewritten. */
export function onlyRemovals(before: Map<string, string>, after: Map<string, string>): boolean {
  for (const [field, value] of after) if (before.get(field) !== value) return false;
  return true;
}
