import { defineScript } from "../contract/lua-script.ts";

/**
 * The durability store's Lua scripts. Every writing script starts with FENCE over the instance's
 * meta hash: KEYS[1] is the meta hash, ARGV[1] the quoted placement epoch. A lower epoch than the
 * stored one is refused with {0, stored}; a higher one is stored. Epochs are compared as decimal
 * strings (length, then bytes) because they may exceed 2^53. All KEYS of one script are keys of
 * one instance (the `{ns/id}` hash tag), so each runs on one slot of a Redis Cluster.
 */
const FENCE = `
local function norm(s)
  local t = string.gsub(s, '^0+', '')
  if t == '' then return '0' end
  return t
end
local function cmp(a, b)
  a = norm(a) b = norm(b)
  if #a ~= #b then if #a < #b then return -1 else return 1 end end
  if a == b then return 0 end
  if a < b then return -1 else return 1 end
end
local stored = redis.call('HGET', KEYS[1], 'epoch')
if stored then
  local c = cmp(ARGV[1], stored)
  if c < 0 then return {0, stored} end
  if c > 0 then redis.call('HSET', KEYS[1], 'epoch', ARGV[1]) end
else
  redis.call('HSET', KEYS[1], 'epoch', ARGV[1])
end
`;

/**
 * KEYS[1] meta   ARGV[1] epoch   ARGV[2] hostname ("" keeps the stored one)
 * Returns {1, alarm due time in ms or ""}.
 */
export const durableActivate = defineScript(
  "durable-activate",
  `${FENCE}
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], 'hostname', ARGV[2]) end
return {1, redis.call('HGET', KEYS[1], 'alarm') or ''}
`,
  "4e7592c2354ede4bfc391a587b86b6a3221038a6",
);

/**
 * KEYS[1] meta   KEYS[2] data   KEYS[3] keys
 * ARGV[1] epoch  ARGV[2..] key1, value1, key2, value2, …
 * Returns {1}.
 */
export const durablePut = defineScript(
  "durable-put",
  `${FENCE}
for i = 2, #ARGV, 2 do
  redis.call('HSET', KEYS[2], ARGV[i], ARGV[i + 1])
  redis.call('ZADD', KEYS[3], 0, ARGV[i])
end
return {1}
`,
  "9557af21504249565929210adc43581ec92d744e",
);

/**
 * KEYS[1] meta   KEYS[2] data   KEYS[3] keys
 * ARGV[1] epoch  ARGV[2..] the keys to delete
 * Returns {1, how many existed}.
 */
export const durableDelete = defineScript(
  "durable-delete",
  `${FENCE}
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('HDEL', KEYS[2], ARGV[i])
  redis.call('ZREM', KEYS[3], ARGV[i])
end
return {1, n}
`,
  "10e1c151c29470318a4dc29a8c9182ecd65656ce",
);

/**
 * KEYS[1] meta   KEYS[2] data   KEYS[3] keys
 * ARGV[1] epoch
 * Returns {1}; the data, the key index and the alarm are gone.
 */
export const durableDeleteAll = defineScript(
  "durable-delete-all",
  `${FENCE}
redis.call('DEL', KEYS[2], KEYS[3])
redis.call('HDEL', KEYS[1], 'alarm')
return {1}
`,
  "77438627f37d7ac99072fc82355efc88d06ab0d0",
);

/**
 * KEYS[1] meta
 * ARGV[1] epoch  ARGV[2] due time in ms, or "" to clear
 * Returns {1}.
 */
export const durableSetAlarm = defineScript(
  "durable-set-alarm",
  `${FENCE}
if ARGV[2] == '' then redis.call('HDEL', KEYS[1], 'alarm') else redis.call('HSET', KEYS[1], 'alarm', ARGV[2]) end
return {1}
`,
  "54ed64654d2957018ae8c110b547039c350b78f1",
);

/**
 * KEYS[1] meta
 * ARGV[1] epoch  ARGV[2] the due time the caller saw
 * Returns {1, 1} when the alarm still had that due time and is cleared, else {1, 0}.
 */
export const durableClearAlarm = defineScript(
  "durable-clear-alarm",
  `${FENCE}
if redis.call('HGET', KEYS[1], 'alarm') == ARGV[2] then
  redis.call('HDEL', KEYS[1], 'alarm')
  return {1, 1}
end
return {1, 0}
`,
  "e02571903db454721f9f6c84489405639dc375d9",
);

/**
 * Read-only, no fence.
 * KEYS[1] data   KEYS[2] keys
 * ARGV[1] lex min  ARGV[2] lex max  ARGV[3] count (-1 = all)  ARGV[4] "1" for descending order
 * Returns {key1, value1, key2, value2, …}.
 */
export const durableList = defineScript(
  "durable-list",
  `
local members
if ARGV[4] == '1' then
  members = redis.call('ZREVRANGEBYLEX', KEYS[2], ARGV[2], ARGV[1], 'LIMIT', 0, ARGV[3])
else
  members = redis.call('ZRANGEBYLEX', KEYS[2], ARGV[1], ARGV[2], 'LIMIT', 0, ARGV[3])
end
local out = {}
for i = 1, #members, 500 do
  local chunk = {}
  for j = i, math.min(i + 499, #members) do chunk[#chunk + 1] = members[j] end
  local values = redis.call('HMGET', KEYS[1], unpack(chunk))
  for j = 1, #chunk do
    if values[j] then
      out[#out + 1] = chunk[j]
      out[#out + 1] = values[j]
    end
  end
end
return out
`,
  "908db156137348a2e13e89d216a62ce41f049bc2",
);

/**
 * On the alarm index (its own slot, never with an instance key).
 * KEYS[1] alarms
 * ARGV[1] instance member  ARGV[2] the due time the caller cleared
 * Returns 1 when the member was removed, else 0.
 */
export const durableUnindexAlarm = defineScript(
  "durable-unindex-alarm",
  `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) == tonumber(ARGV[2]) then return redis.call('ZREM', KEYS[1], ARGV[1]) end
return 0
`,
  "ce3d525e54900177e1c0bcdd9b2970ccf1ee8c7f",
);
