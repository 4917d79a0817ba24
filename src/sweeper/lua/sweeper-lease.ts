import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { sweeperLeaseScriptCall } from "./scripts.generated.ts";

export interface SweeperLeaseInput {
  holder: string;
  /** TTL (ms), 0 to release. */
  ttlMs: number;
}

/**
 * Takes, renews or releases the sweeper lease (lua/sweeper-lease-1.lua); true when the caller holds
 * (or just released) it.
 */
export async function sweeperLease(redis: RedisPort, keys: Keys, input: SweeperLeaseInput): Promise<boolean> {
  const call = sweeperLeaseScriptCall({ lease: keys.sweeperLease }, { holder: input.holder, ttlMs: input.ttlMs });
  return Number(await runCall(redis, call)) === 1;
}
