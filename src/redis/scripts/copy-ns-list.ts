import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_EXPIRY_INDEX, LUA_LIST_ENTRY, LUA_NOW, LUA_PAIR, LUA_SPENT } from "./lua-lib.ts";
import { LUA_NS_LIST } from "./lua-ns-list.ts";

/**
 * copy-ns-list: seeds a bucket that has no list for a namespace with another bucket's (read by
 * ns-list-snapshot): the sessions join the list and their record mirrors come along, as a
 * heartbeat would write them. Writes nothing when the list exists by now (a heartbeat or another
 * copy got here first), so running it twice is running it once.
 *
 * Per session, the bucket's own state wins where it is newer: a mirror of a later revision here
 * is kept (and listed), a session whose client this bucket knows at a higher generation (replaced
 * or deregistered) is skipped, and a newer registration takes the client over as register-bucket
 * would. The entry's headroom is the record's less the placements this bucket counted under its
 * headroom revision.
 *
 * KEYS[1] workers           hash sessionId → record JSON
 * KEYS[2] clients           hash clientId → sessionId \n generation
 * KEYS[3] worker expiries   zset sessionId → expiry (the index over KEYS[1])
 * KEYS[4] spent             hash sessionId → headroomRev \n placements in this bucket since
 * KEYS[5] ns list           hash sessionId → expiry \n headroom \n flags
 * KEYS[6] ns expiries       zset sessionId → expiry (the list's index)
 * KEYS[7] ns summary        hash n, sum, v, a:{slot} (lua-ns-list.ts)
 * ARGV[1] sessionId, ARGV[2] its record JSON, and so on in pairs (ns-list-snapshot's reply)
 *
 * Returns the number of sessions listed; 0 when the list already existed.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_LIST_ENTRY}${LUA_NS_LIST}${LUA_SPENT}
if redis.call('EXISTS', KEYS[5]) == 1 then return 0 end
local now = now_ms()
local listed = 0
for i = 1, #ARGV - 1, 2 do
  local sid, json = ARGV[i], ARGV[i + 1]
  local rec = cjson.decode(json)
  local held = redis.call('HGET', KEYS[1], sid)
  if held then
    local h = cjson.decode(held)
    if (tonumber(h.rev) or 0) >= (tonumber(rec.rev) or 0) then rec, json = h, held end
  end
  local cur = redis.call('HGET', KEYS[2], rec.clientId)
  local csid, cgen = '', nil
  if cur then
    csid, cgen = pair(cur)
    cgen = tonumber(cgen) or 0
  end
  if not cgen or cgen <= rec.gen then
    if csid ~= '' and csid ~= sid then
      index_del(KEYS[1], KEYS[3], csid)
      redis.call('HDEL', KEYS[4], csid)
    end
    if csid ~= sid then redis.call('HSET', KEYS[2], rec.clientId, sid .. '\\n' .. rec.gen) end
    if json ~= held then index_set(KEYS[1], KEYS[3], sid, json, rec.expiry) end
    rec.headroom = rec.headroom - spent_get(KEYS[4], sid, headroom_rev(rec))
    list_set(KEYS[5], KEYS[6], KEYS[7], sid, list_entry(rec), now)
    listed = listed + 1
  end
end
return listed
`;

export const copyNsListScript = defineScript("copy-ns-list", LUA, "d0b4d62e7327457eb7fda0161d0876e6ad6aaa6b");

export interface CopyNsListInput {
  /** The bucket to seed. */
  bucket: number;
  hostname: string;
  ns: string;
  /** Another bucket's ns-list-snapshot: sessionId, record JSON, … */
  snapshot: string[];
}

/** The number of sessions listed; 0 when the list already existed. */
export async function copyNsList(redis: RedisPort, keys: Keys, input: CopyNsListInput): Promise<number> {
  const { bucket, hostname, ns } = input;
  return Number(
    await redis.run(
      copyNsListScript,
      [
        keys.workers(bucket),
        keys.clients(bucket),
        keys.workerExpiries(bucket),
        keys.spent(bucket),
        ...keys.nsListKeys(bucket, hostname, ns),
      ],
      input.snapshot,
    ),
  );
}
