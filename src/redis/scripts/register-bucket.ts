import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";
import { LUA_EXPIRY_INDEX, LUA_LIST_ENTRY, LUA_NOW, LUA_PAIR, LUA_PRUNE_MIRRORS, LUA_ROW } from "./lua-lib.ts";
import { LUA_NS_LIST } from "./lua-ns-list.ts";

/**
 * register-bucket: the per-bucket half of POST /registry/register, atomic in one {bucket} slot.
 * Mirrors the record into the bucket (unless a newer registration of the same client, or a later
 * revision of this record — a drain applied meanwhile — got here first), joins the namespace
 * lists, prunes dead mirrors, and reclaims the worker's in-memory instances: rows owned by
 * prevSessionId re-bind to the new session keeping their epoch.
 *
 * KEYS[1]            workers   hash sessionId → record JSON (the bucket's mirror)
 * KEYS[2]            clients   hash clientId → sessionId \n generation
 * KEYS[3]            worker expiries  zset sessionId → expiry (the index over KEYS[1])
 * KEYS[4 … 3+3L]     namespace lists, three keys each: list, expiries, summary (lua-ns-list.ts)
 * KEYS[4+3L …]       placements hashes named by the reclaim pairs
 * ARGV[1] sessionId
 * ARGV[2] record JSON (carries clientId and gen)
 * ARGV[3] lease TTL ms
 * ARGV[4] L, the number of namespace lists
 * ARGV[5] prevSessionId or "" (reclaims nothing when "")
 * ARGV[6 …] reclaim pairs: index into KEYS of a placements hash, id
 *
 * Returns {"ok" | "stale", {duplicate pairs…}, {reclaimed-with-wind-down: index, id, expiry…}}.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_ROW}${LUA_EXPIRY_INDEX}${LUA_PRUNE_MIRRORS}${LUA_LIST_ENTRY}${LUA_NS_LIST}
local now = now_ms()
local sid, json, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local nlists, prev = tonumber(ARGV[4]), ARGV[5]
local rec = cjson.decode(json)

local status = 'ok'
local cur = redis.call('HGET', KEYS[2], rec.clientId)
if cur then
  local csid, cgen = pair(cur)
  if tonumber(cgen) > rec.gen then
    status = 'stale'
  elseif csid ~= sid and csid ~= '' then
    index_del(KEYS[1], KEYS[3], csid)
    for i = 4, 3 + 3 * nlists, 3 do
      local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
      list_del(list_key, exps_key, summary_key, csid)
    end
  end
end

if status == 'ok' then
  redis.call('HSET', KEYS[2], rec.clientId, sid .. '\\n' .. rec.gen)
  -- A drain applied before this mirror got here already mirrored a later revision: keep it.
  local held = redis.call('HGET', KEYS[1], sid)
  if not (held and (tonumber(cjson.decode(held).rev) or 0) > (tonumber(rec.rev) or 0)) then
    index_set(KEYS[1], KEYS[3], sid, json, rec.expiry)
    local entry = list_entry(rec)
    for i = 4, 3 + 3 * nlists, 3 do
      local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
      list_set(list_key, exps_key, summary_key, sid, entry, now)
    end
  end
end

prune_mirrors(KEYS[1], KEYS[3], now, lease)

local dups, requeue = {}, {}
for i = 6, #ARGV, 2 do
  local kidx, id = tonumber(ARGV[i]), ARGV[i + 1]
  local raw = redis.call('HGET', KEYS[kidx], id)
  local row = raw and row_decode(raw)
  if status == 'ok' and prev ~= '' and row and row.sid == prev then
    row.sid = sid
    redis.call('HSET', KEYS[kidx], id, row_encode(row))
    if row.expiry ~= '' then
      table.insert(requeue, tostring(kidx)); table.insert(requeue, id); table.insert(requeue, row.expiry)
    end
  elseif not (row and row.sid == sid) then
    table.insert(dups, tostring(kidx)); table.insert(dups, id)
  end
end
return {status, dups, requeue}
`;

export const registerBucketScript = defineScript("register-bucket", LUA, "6603ccbdb6d8ab9b69f29699356c1c3654072c72");

export interface RegisterBucketInput {
  bucket: number;
  /** The record mirrored: its namespace lists are among the call's keys. */
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored (carries clientId and gen). */
  json: string;
  leaseTtlMs: number;
  /** The session whose rows are reclaimed, "" for none. */
  prevSessionId: string;
  /** The instances the worker holds in this bucket, each with the env of its namespace. */
  instances: ReadonlyArray<{ env: string; ns: string; id: string }>;
}

/** A register-bucket call, with what its reply's KEYS indexes stand for. */
export interface RegisterBucketCall extends ScriptCall {
  /** Keys before the first placements hash. */
  readonly headLength: number;
  /** The namespace of each placements hash named, in KEYS order. */
  readonly placementNs: readonly string[];
}

export interface RegisterBucketResult {
  /** Instances the worker holds that it did not get back. */
  duplicates: Array<{ ns: string; id: string }>;
  /** Reclaimed rows that carry a wind-down expiry (ms): their wind_down goes to the new session. */
  windDowns: Array<{ ns: string; id: string; deadlineAt: number }>;
}

export function registerBucketCall(keys: Keys, input: RegisterBucketInput): RegisterBucketCall {
  const { bucket, record } = input;
  const lists = keys.nsListKeysFor(bucket, record.hostname, record.namespaces);
  const head = [keys.workers(bucket), keys.clients(bucket), keys.workerExpiries(bucket), ...lists];
  const placementKeys: string[] = [];
  const placementNs: string[] = [];
  const reclaim: (string | number)[] = [];
  for (const { env, ns, id } of input.instances) {
    const key = keys.placements(bucket, env, ns);
    let index = placementKeys.indexOf(key);
    if (index < 0) {
      index = placementKeys.push(key) - 1;
      placementNs.push(ns);
    }
    reclaim.push(head.length + index + 1, id);
  }
  return {
    script: registerBucketScript,
    keys: [...head, ...placementKeys],
    args: [record.sessionId, input.json, input.leaseTtlMs, record.namespaces.length, input.prevSessionId, ...reclaim],
    headLength: head.length,
    placementNs,
  };
}

export function parseRegisterBucket(reply: RedisReply, call: RegisterBucketCall): RegisterBucketResult {
  const [, dups, rewound] = reply as [string, string[], string[]];
  const nsOf = (kidx: number) => call.placementNs[kidx - call.headLength - 1] ?? "";
  const duplicates: RegisterBucketResult["duplicates"] = [];
  for (let j = 0; j < dups.length; j += 2) duplicates.push({ ns: nsOf(Number(dups[j])), id: dups[j + 1]! });
  const windDowns: RegisterBucketResult["windDowns"] = [];
  for (let j = 0; j < rewound.length; j += 3) {
    windDowns.push({ ns: nsOf(Number(rewound[j])), id: rewound[j + 1]!, deadlineAt: Number(rewound[j + 2]) });
  }
  return { duplicates, windDowns };
}
