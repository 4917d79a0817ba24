import { defineScript } from "../../contract/lua-script.ts";
import type { Keys } from "../keys.ts";
import type { RedisReply, ScriptCall } from "../port.ts";
import { LUA_EXPIRY_INDEX, LUA_NOW, LUA_PRUNE_MIRRORS } from "./lua-lib.ts";

/**
 * gc-bucket: the sweeper's per-bucket GC of mirrors dead for longer than a lease. Namespace
 * lists shed such sessions lazily when a resolve reads them.
 *
 * KEYS[1] workers   hash sessionId → record JSON
 * KEYS[2] worker expiries  zset sessionId → expiry (the index over KEYS[1])
 * ARGV[1] lease TTL ms
 *
 * Returns the number of mirrors pruned.
 */
const LUA = `${LUA_NOW}${LUA_EXPIRY_INDEX}${LUA_PRUNE_MIRRORS}
return prune_mirrors(KEYS[1], KEYS[2], now_ms(), tonumber(ARGV[1]))
`;

export const gcBucketScript = defineScript("gc-bucket", LUA, "271f1e9f13489a2e71d9b3cb1c7227841385554f");

export interface GcBucketInput {
  bucket: number;
  leaseTtlMs: number;
}

export function gcBucketCall(keys: Keys, input: GcBucketInput): ScriptCall {
  const { bucket } = input;
  return {
    script: gcBucketScript,
    keys: [keys.workers(bucket), keys.workerExpiries(bucket)],
    args: [input.leaseTtlMs],
  };
}

/** The number of mirrors pruned. */
export function parseGcBucket(reply: RedisReply): number {
  return Number(reply);
}
