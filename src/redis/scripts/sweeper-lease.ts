import { defineScript } from "../script.ts";

/**
 * sweeper-lease: takes or renews the sweeper lease, so one sweep pass runs at a time across
 * the fleet (cron isolates and Node timers alike). A holder renews its own lease.
 *
 * KEYS[1] sweeper lease   string: holder id, with a TTL
 * ARGV[1] holder id
 * ARGV[2] TTL ms
 *
 * Returns 1 when the caller holds the lease, else 0.
 */
const LUA = `
local holder = redis.call('GET', KEYS[1])
if holder and holder ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
`;

export const sweeperLease = defineScript("sweeper-lease", LUA, "9dd6bcb4602791e00b6a9ba3e08b53e01a3b6396");
