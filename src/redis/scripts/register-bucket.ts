import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { ScriptCall } from "../port.ts";
import { LUA_EXPIRY_INDEX, LUA_LIST_ENTRY, LUA_NOW, LUA_PAIR, LUA_PRUNE_MIRRORS } from "./lua-lib.ts";
import { LUA_NS_LIST } from "./lua-ns-list.ts";

/**
 * register-bucket: the per-bucket mirror of POST /registry/register, atomic in one {bucket} slot.
 * Mirrors the record into the bucket (unless a newer registration of the same client, or a later
 * revision of this record — a drain applied meanwhile — got here first), joins the namespace
 * lists and prunes dead mirrors. The reclaim of the worker's in-memory instances runs after it,
 * in chunks (rebind-rows.ts), so that no one script call grows with the ids a register names.
 *
 * KEYS[1]            workers   hash sessionId → record JSON (the bucket's mirror)
 * KEYS[2]            clients   hash clientId → sessionId \n generation
 * KEYS[3]            worker expiries  zset sessionId → expiry (the index over KEYS[1])
 * KEYS[4 … 3+3L]     namespace lists, three keys each: list, expiries, summary (lua-ns-list.ts)
 * ARGV[1] sessionId
 * ARGV[2] record JSON (carries clientId and gen)
 * ARGV[3] lease TTL ms
 * ARGV[4] L, the number of namespace lists
 *
 * Returns "ok", or "stale" when a newer registration of the client holds the bucket.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_PRUNE_MIRRORS}${LUA_LIST_ENTRY}${LUA_NS_LIST}
local now = now_ms()
local sid, json, lease = ARGV[1], ARGV[2], tonumber(ARGV[3])
local nlists = tonumber(ARGV[4])
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
return status
`;

export const registerBucketScript = defineScript("register-bucket", LUA, "8f24f18409d372232071fbbe941e145eab0df5ce");

export interface RegisterBucketInput {
  bucket: number;
  /** The record mirrored: its namespace lists are among the call's keys. */
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored (carries clientId and gen). */
  json: string;
  leaseTtlMs: number;
}

export function registerBucketCall(keys: Keys, input: RegisterBucketInput): ScriptCall {
  const { bucket, record } = input;
  const lists = keys.nsListKeysFor(bucket, record.hostname, record.namespaces);
  return {
    script: registerBucketScript,
    keys: [keys.workers(bucket), keys.clients(bucket), keys.workerExpiries(bucket), ...lists],
    args: [record.sessionId, input.json, input.leaseTtlMs, record.namespaces.length],
  };
}

