import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_NOW, LUA_ROW } from "./lua-lib.ts";

/**
 * scan-orphans: one HSCAN page of a placements hash, listing on the overwritten hash every row
 * whose owner is dead (no mirror, or expiry ≤ now), so the durability sweep brings the instance
 * back at a live worker. A row already listed keeps its marker.
 *
 * KEYS[1] placements    hash id → row
 * KEYS[2] workers       hash sessionId → record JSON (the bucket's mirror)
 * KEYS[3] overwritten   hash env \n ns \n id → epoch
 * ARGV[1] HSCAN cursor
 * ARGV[2] COUNT hint
 * ARGV[3] env \n ns (the marker field's prefix)
 *
 * Returns {next cursor, rows listed}.
 */
const LUA = `${LUA_NOW}${LUA_ROW}
local now = now_ms()
local page = redis.call('HSCAN', KEYS[1], ARGV[1], 'COUNT', tonumber(ARGV[2]))
local rows, listed, alive = page[2], 0, {}
for i = 1, #rows, 2 do
  local row = row_decode(rows[i + 1])
  if row.epoch ~= '' then
    local live = alive[row.sid]
    if live == nil then
      local w = redis.call('HGET', KEYS[2], row.sid)
      live = (w and cjson.decode(w).expiry > now) or false
      alive[row.sid] = live
    end
    if not live then listed = listed + redis.call('HSETNX', KEYS[3], ARGV[3] .. '\\n' .. rows[i], row.epoch) end
  end
end
return {page[1], listed}
`;

export const scanOrphansScript = defineScript("scan-orphans", LUA, "8d9d800148d7f8b2953b1c1457e46c280d6bacb3");

export interface ScanOrphansInput {
  bucket: number;
  /** A member of the bucket's spaces set, `env \n ns`: the placements hash scanned. */
  space: string;
  cursor: string;
  /** The HSCAN COUNT hint. */
  count: number;
}

export interface ScanOrphansResult {
  /** "0" when the hash is done. */
  next: string;
  listed: number;
}

export async function scanOrphans(redis: RedisPort, keys: Keys, input: ScanOrphansInput): Promise<ScanOrphansResult> {
  const { bucket, space } = input;
  const [env = "", ns = ""] = space.split("\n");
  const [next, listed] = (await redis.run(
    scanOrphansScript,
    [keys.placements(bucket, env, ns), keys.workers(bucket), keys.overwritten(bucket)],
    [input.cursor, input.count, space],
  )) as [string, number];
  return { next: String(next), listed: Number(listed) };
}
