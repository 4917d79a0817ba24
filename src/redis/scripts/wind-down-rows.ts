import { defineScript } from "../script.ts";
import { LUA_ROW } from "./lua-lib.ts";

/**
 * wind-down-rows: stamps (or clears) the wind-down expiry of placement rows in one bucket: the
 * named ids, or every row of the (env, namespace) when none is named. The fence lives on the
 * row, so it survives the owner's death and binds a replacement owner.
 *
 * KEYS[1] placements   hash id → row
 * ARGV[1] deadline ms, or "" to clear the wind-down
 * ARGV[2 …] ids (none: every row)
 *
 * Returns {sessionId, id, hostname, …} of the rows stamped.
 */
const LUA = `${LUA_ROW}
local out = {}
local function stamp(id, raw)
  local row = row_decode(raw)
  row.expiry = ARGV[1]
  redis.call('HSET', KEYS[1], id, row_encode(row))
  out[#out + 1] = row.sid
  out[#out + 1] = id
  out[#out + 1] = row.host
end
if #ARGV > 1 then
  for i = 2, #ARGV do
    local raw = redis.call('HGET', KEYS[1], ARGV[i])
    if raw then stamp(ARGV[i], raw) end
  end
else
  local all = redis.call('HGETALL', KEYS[1])
  for i = 1, #all, 2 do stamp(all[i], all[i + 1]) end
end
return out
`;

export const windDownRows = defineScript("wind-down-rows", LUA, "0fdc9dcfad3e85503415d02b23ea533641a6164c");
