import type { Keys } from "../../redis/keys.ts";
import { runCall } from "../../redis/lua/run-call.ts";
import type { RedisPort } from "../../redis/port.ts";
import { sessionKeys } from "../../registry/lua/session-keys.ts";
import { gcFleetScriptCall } from "./scripts.generated.ts";

export interface GcFleetInput {
  leaseTtlMs: number;
  hostnameAware: boolean;
  /** The audit trail's cap: pruned sessions are recorded as worker.died, ended ejections as worker.readmitted. */
  auditCap: number;
}

/** The fleet-wide GC (lua/gc-fleet-8.lua): the number of sessions left. */
export async function gcFleet(redis: RedisPort, keys: Keys, input: GcFleetInput): Promise<number> {
  const call = gcFleetScriptCall(sessionKeys(keys), {
    leaseTtlMs: input.leaseTtlMs,
    hostnameAware: input.hostnameAware ? "1" : "0",
    auditCap: input.auditCap,
  });
  return Number(await runCall(redis, call));
}
