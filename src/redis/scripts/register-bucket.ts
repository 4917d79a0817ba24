import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import {
  LUA_EXPIRY_INDEX,
  LUA_LIST_ENTRY,
  LUA_NOW,
  LUA_PAIR,
  LUA_PRUNE_MIRRORS,
  LUA_REBIND_ROWS,
  LUA_ROW,
} from "./lua-lib.ts";
import { LUA_NS_LIST } from "./lua-ns-list.ts";
import { type RebindRowsCall, rebindPairs } from "./rebind-rows.ts";

/**
 * register-bucket: the per-bucket half of POST /registry/register, atomic in one {bucket} slot.
 * Mirrors the record into the bucket (unless a newer registration of the same client, or a later
 * revision of this record — a drain applied meanwhile — got here first), joins the namespace
 * lists, prunes dead mirrors, and reclaims the first chunk (at most REBIND_CHUNK_IDS) of the
 * worker's in-memory instances in this bucket: rows owned by prevSessionId re-bind to the new
 * session keeping their epoch, in the same step that moves the client's mirror, so no reader
 * sees a row of the replaced session without that session's mirror. Ids past the chunk re-bind
 * afterwards through rebind-rows.ts, so no one call grows with the ids a register names.
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
 * Returns {"ok" | "stale", {duplicates: index, id…}, {re-bound with a wind-down: index, id, expiry…}};
 * "stale" (a newer registration of the client holds the bucket) re-binds nothing.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_ROW}${LUA_REBIND_ROWS}${LUA_EXPIRY_INDEX}${LUA_PRUNE_MIRRORS}${LUA_LIST_ENTRY}${LUA_NS_LIST}
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
local dups, requeue = rebind_rows(prev, sid, status == 'ok' and prev ~= '', 6)
return {status, dups, requeue}
`;

export const registerBucketScript = defineScript("register-bucket", LUA, "c536cd0324cc2a0300236a202d9f3ae5d2614ccf");

export interface RegisterBucketInput {
  bucket: number;
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored (carries clientId and gen). */
  json: string;
  leaseTtlMs: number;
  /** The session whose rows are reclaimed, "" for none. */
  prevSessionId: string;
  /** The first chunk (at most REBIND_CHUNK_IDS) of the instances held in this bucket, each with its namespace's env. */
  rows: ReadonlyArray<{ env: string; ns: string; id: string }>;
}

/** A register-bucket call; its reply's rebind part reads with parseRebindRows (after its status). */
export function registerBucketCall(keys: Keys, input: RegisterBucketInput): RebindRowsCall {
  const { bucket, record } = input;
  const lists = keys.nsListKeysFor(bucket, record.hostname, record.namespaces);
  const callKeys = [keys.workers(bucket), keys.clients(bucket), keys.workerExpiries(bucket), ...lists];
  const headLength = callKeys.length;
  const { placementNs, pairs } = rebindPairs(keys, bucket, input.rows, callKeys);
  return {
    script: registerBucketScript,
    keys: callKeys,
    args: [record.sessionId, input.json, input.leaseTtlMs, record.namespaces.length, input.prevSessionId, ...pairs],
    placementNs,
    headLength,
  };
}
