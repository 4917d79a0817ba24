import type { AppDeps } from "../../../deps/app-deps.ts";
import { liveRecords } from "../../../operator/fleet-view.ts";

export interface FleetSnapshot {
  live: number;
  degraded: number;
  draining: number;
  /** namespace → live placements. */
  placements: Record<string, number>;
  parked: number;
}

/** What the fleet gauges show: one pass over the records, every bucket's placements and wakes. */
export async function fleetSnapshot(deps: AppDeps): Promise<FleetSnapshot> {
  const { keys, redis } = deps;
  const { now, records } = await liveRecords(deps);
  const live = new Set(records.map((r) => r.sessionId));
  const placements: Record<string, number> = {};
  let parked = 0;
  for (const bucket of keys.allBuckets()) {
    for (const space of await redis.smembers(keys.spaces(bucket))) {
      const [env = "", ns = ""] = space.split("\n");
      for (const raw of Object.values(await redis.hgetall(keys.placements(bucket, env, ns)))) {
        const [sessionId = "", epoch = "", expiry = ""] = raw.split("\n");
        if (epoch !== "" && live.has(sessionId) && (expiry === "" || Number(expiry) > now))
          placements[ns] = (placements[ns] ?? 0) + 1;
      }
    }
    for (const state of Object.values(await redis.hgetall(keys.wakes(bucket))))
      if (state.split("\n")[2] === "1") parked++;
  }
  return {
    live: records.length,
    degraded: records.filter((r) => r.degradedSince !== undefined).length,
    draining: records.filter((r) => r.draining).length,
    placements,
    parked,
  };
}
