import { defineScript } from "../script.ts";
import { LUA_NOW, LUA_PRUNE_MIRRORS } from "./lua-lib.ts";

/**
 * gc-bucket: the sweeper's per-bucket GC of mirrors dead for longer than a lease. Namespace
 * lists shed such sessions lazily when a resolve reads them.
 *
 * KEYS[1] workers   hash sessionId → record JSON
 * ARGV[1] lease TTL ms
 *
 * Returns the number of mirrors pruned.
 */
const LUA = `${LUA_NOW}${LUA_PRUNE_MIRRORS}
return prune_mirrors(KEYS[1], now_ms(), tonumber(ARGV[1]))
`;

export const gcBucket = defineScript("gc-bucket", LUA, "bedd4ec6e55461411dc043f0f236c6eea041afd9");
