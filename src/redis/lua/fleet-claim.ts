import type { Keys } from "../keys.ts";
import type { RedisPort } from "../port.ts";
import { runCall } from "./run-call.ts";
import { fleetClaimScriptCall } from "./scripts.generated.ts";

export interface FleetClaimInput {
  nodeId: string;
  /** This node's license JSON. */
  license: string;
  fleetEpoch: number;
  leaseTtlMs: number;
}

export type FleetClaimResult =
  | { kind: "serving" }
  /** A live member of the same or a higher epoch runs another license. */
  | { kind: "member"; nodeId: string; license: string }
  /** The fleet license is another one, of the same or a higher epoch. */
  | { kind: "license"; license: string };

/** One node's turn at the fleet license and cluster membership (lua/fleet-claim-2.lua). */
export async function fleetClaim(redis: RedisPort, keys: Keys, input: FleetClaimInput): Promise<FleetClaimResult> {
  const { nodeId, license, fleetEpoch, leaseTtlMs } = input;
  const call = fleetClaimScriptCall(
    { license: keys.license, members: keys.members },
    { nodeId, license, fleetEpoch, leaseTtlMs },
  );
  const reply = (await runCall(redis, call)) as [number, string?, string?, string?];
  if (reply[0] === 1) return { kind: "serving" };
  return reply[1] === "member"
    ? { kind: "member", nodeId: String(reply[2]), license: String(reply[3]) }
    : { kind: "license", license: String(reply[2]) };
}
