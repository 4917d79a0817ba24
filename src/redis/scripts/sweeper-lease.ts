import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";

/**
 * sweeper-lease: takes, renews or releases the sweeper lease, so one sweep pass runs at a time
 * across the fleet (cron isolates and Node timers alike). Only the holder renews or releases.
 *
 * KEYS[1] sweeper lease   string: holder id, with a TTL
 * ARGV[1] holder id
 * ARGV[2] TTL ms, or 0 to release
 *
 * Returns 1 when the caller holds (or just released) the lease, else 0.
 */
const LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
if tonumber(ARGV[2]) == 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
end
return 1
`;

export const sweeperLeaseScript = defineScript("sweeper-lease", LUA, "f213c0c30d91ce21801504693d86bbe186808785");

export interface SweeperLeaseInput {
  holder: string;
  /** TTL (ms), 0 to release. */
  ttlMs: number;
}

/** True when the caller holds (or just released) the lease. */
export async function sweeperLease(redis: RedisPort, keys: Keys, input: SweeperLeaseInput): Promise<boolean> {
  return Number(await redis.run(sweeperLeaseScript, [keys.sweeperLease], [input.holder, input.ttlMs])) === 1;
}
