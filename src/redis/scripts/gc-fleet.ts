import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { LUA_DROP_SESSION, LUA_EXPIRY_INDEX, LUA_NOW, LUA_PAIR, LUA_PRUNE_FLEET } from "./lua-lib.ts";
import { sessionScriptKeys } from "./session-keys.ts";

/**
 * gc-fleet: the sweeper's fleet-wide GC, the same pruning register does: sessions dead for
 * longer than a lease, bindings without a live worker, and expired cluster members.
 *
 * KEYS[1] sessions            hash sessionId → record JSON
 * KEYS[2] clients             hash clientId → account \\n sessionId
 * KEYS[3] hostname bindings   hash {hostname}{ns} → env \\n epoch
 * KEYS[4] env bindings        hash env → takeover \\n epoch
 * KEYS[5] members             hash nodeId → member JSON
 * KEYS[6] session expiries    zset sessionId → expiry (the index over KEYS[1])
 * ARGV[1] lease TTL ms
 * ARGV[2] "1" in hostname-aware mode
 *
 * Returns the number of sessions left.
 */
const LUA = `${LUA_NOW}${LUA_PAIR}${LUA_EXPIRY_INDEX}${LUA_DROP_SESSION}${LUA_PRUNE_FLEET}
local now = now_ms()
prune_fleet(KEYS[1], KEYS[6], KEYS[2], KEYS[3], KEYS[4], now, tonumber(ARGV[1]), ARGV[2] == '1')
local members = redis.call('HGETALL', KEYS[5])
for i = 1, #members, 2 do
  if cjson.decode(members[i + 1]).expiry <= now then redis.call('HDEL', KEYS[5], members[i]) end
end
return redis.call('HLEN', KEYS[1])
`;

export const gcFleetScript = defineScript("gc-fleet", LUA, "2155032c01925def5aaa0701ceaa25ecb4b2c134");

export interface GcFleetInput {
  leaseTtlMs: number;
  hostnameAware: boolean;
}

/** The number of sessions left. */
export async function gcFleet(redis: RedisPort, keys: Keys, input: GcFleetInput): Promise<number> {
  return Number(
    await redis.run(gcFleetScript, sessionScriptKeys(keys, "gc-fleet"), [
      input.leaseTtlMs,
      input.hostnameAware ? "1" : "0",
    ]),
  );
}
