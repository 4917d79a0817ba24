import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { ScriptCall } from "../port.ts";
import { LUA_EXPIRY_INDEX, LUA_LIST_ENTRY, LUA_NOW, LUA_PAIR, LUA_SPENT } from "./lua-lib.ts";
import { LUA_NS_LIST } from "./lua-ns-list.ts";

/**
 * heartbeat-bucket: refreshes a session's mirror in one bucket and re-adds it to the bucket's
 * namespace lists (which also repairs a bucket that lost them). A session older than the client's
 * registration or tombstone in this bucket (replaced or deregistered: a lower generation) is left
 * alone, and so is a mirror of a later revision of the record (`rev`: a drain applied while this
 * heartbeat was in flight). A newer registration than the bucket's takes the bucket over.
 *
 * Headroom: a record whose headroom revision (`headroomRev`, set by each heartbeat) differs from
 * the one the bucket's spent count was kept under starts the count afresh. Every list entry gets
 * the record's headroom less the placements already spent: this bucket's own count, read here,
 * and ARGV[3], the other buckets' counts as the caller read them before this mirror (0 for a
 * heartbeat, whose headroom replaces all of them). Spent counts of sessions without a mirror here
 * are dropped once they outnumber the mirrors.
 *
 * KEYS[1]       workers   hash sessionId → record JSON
 * KEYS[2]       clients   hash clientId → sessionId \n generation
 * KEYS[3]       worker expiries  zset sessionId → expiry (the index over KEYS[1])
 * KEYS[4]       spent     hash sessionId → headroomRev \n placements in this bucket since
 * KEYS[5 …]     namespace lists of the session, three keys each: list, expiries, summary
 *               (lua-ns-list.ts)
 * ARGV[1] sessionId
 * ARGV[2] record JSON (carries clientId, gen and headroomRev)
 * ARGV[3] placements spent in other buckets under the record's headroom revision ("" = 0)
 *
 * Returns 1 when mirrored, 0 when superseded here.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_LIST_ENTRY}${LUA_NS_LIST}${LUA_SPENT}
local sid, json = ARGV[1], ARGV[2]
local elsewhere = tonumber(ARGV[3]) or 0
local rec = cjson.decode(json)
local held = redis.call('HGET', KEYS[1], sid)
if held and (tonumber(cjson.decode(held).rev) or 0) > (tonumber(rec.rev) or 0) then return 0 end
local cur = redis.call('HGET', KEYS[2], rec.clientId)
if cur then
  local csid, cgen = pair(cur)
  if tonumber(cgen) > rec.gen then return 0 end
  if csid ~= sid then
    -- A registration newer than the bucket's (a drain mirrors it before its register-bucket got
    -- here): take the bucket over for it as register-bucket will, dropping the replaced session.
    if csid ~= '' then
      index_del(KEYS[1], KEYS[3], csid)
      redis.call('HDEL', KEYS[4], csid)
      for i = 5, #KEYS, 3 do
        local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
        list_del(list_key, exps_key, summary_key, csid)
      end
    end
    redis.call('HSET', KEYS[2], rec.clientId, sid .. '\\n' .. rec.gen)
  end
else
  redis.call('HSET', KEYS[2], rec.clientId, sid .. '\\n' .. rec.gen)
end
index_set(KEYS[1], KEYS[3], sid, json, rec.expiry)

local own, replaced = spent_get(KEYS[4], sid, headroom_rev(rec))
if replaced then redis.call('HDEL', KEYS[4], sid) end
if redis.call('HLEN', KEYS[4]) > redis.call('HLEN', KEYS[1]) then
  for _, s in ipairs(redis.call('HKEYS', KEYS[4])) do
    if redis.call('HEXISTS', KEYS[1], s) == 0 then redis.call('HDEL', KEYS[4], s) end
  end
end
rec.headroom = rec.headroom - elsewhere - own

local entry, now = list_entry(rec), now_ms()
for i = 5, #KEYS, 3 do
  local list_key, exps_key, summary_key = KEYS[i], KEYS[i + 1], KEYS[i + 2]
  list_set(list_key, exps_key, summary_key, sid, entry, now)
end
return 1
`;

export const heartbeatBucketScript = defineScript("heartbeat-bucket", LUA, "14cae92dd5f97eab6d4700aff279715beaa672ac");

export interface HeartbeatBucketInput {
  bucket: number;
  /** The record mirrored: its namespace lists are the call's keys. */
  record: { sessionId: string; hostname: string; namespaces: readonly string[] };
  /** The record's JSON as mirrored. */
  json: string;
  /** Placements spent in other buckets under the record's headroom revision (0 for a heartbeat). */
  spentElsewhere: number;
}

export function heartbeatBucketCall(keys: Keys, input: HeartbeatBucketInput): ScriptCall {
  const { bucket, record } = input;
  return {
    script: heartbeatBucketScript,
    keys: [
      keys.workers(bucket),
      keys.clients(bucket),
      keys.workerExpiries(bucket),
      keys.spent(bucket),
      ...keys.nsListKeysFor(bucket, record.hostname, record.namespaces),
    ],
    args: [record.sessionId, input.json, input.spentElsewhere],
  };
}
