/**
 * What Redis says about a scenario: INFO memory (used_memory), INFO commandstats (calls and microseconds per command,
 * reset with CONFIG RESETSTAT before the scenario) and the slow log. Calls per HTTP request
 * show how many round trips each Pinboard request costs; usec_per_call of evalsha is the
 * server-side time of the scripts. Commands a script runs (redis.call) are counted too, under
 * their own names.
 */
import type { Redis } from "ioredis";

export interface CommandStat {
  calls: number;
  usecPerCall: number;
}

export async function resetRedisStats(redis: Redis): Promise<void> {
  await redis.config("RESETSTAT");
  await redis.slowlog("RESET");
}

/** Per command (lower-case), calls and µs per call since the last reset; the bench's own INFO/CONFIG calls left out. */
export async function commandStats(redis: Redis): Promise<Record<string, CommandStat>> {
  const info = await redis.info("commandstats");
  const out: Record<string, CommandStat> = {};
  for (const line of info.split(/\r?\n/)) {
    const m = /^cmdstat_([^:]+):calls=(\d+),usec=\d+,usec_per_call=([\d.]+)/.exec(line);
    if (!m || ["info", "config", "slowlog"].includes(m[1]!.split("|")[0]!)) continue;
    out[m[1]!] = { calls: Number(m[2]), usecPerCall: Number(m[3]) };
  }
  return out;
}

/** Commands per request and their µs per call, busiest first, as a compact string. */
export function describeCommands(stats: Record<string, CommandStat>, requests: number): string {
  return Object.entries(stats)
    .sort((a, b) => b[1].calls - a[1].calls)
    .slice(0, 6)
    .map(([cmd, s]) => `${cmd} ${(s.calls / Math.max(1, requests)).toFixed(2)}/req @${s.usecPerCall.toFixed(1)}µs`)
    .join(", ");
}

/** The slowest entries of SLOWLOG (commands over slowlog-log-slower-than, 10 ms by default). */
export async function slowLog(redis: Redis, count = 5): Promise<Array<{ usec: number; command: string }>> {
  const entries = (await redis.slowlog("GET", count)) as Array<[number, number, number, string[]]>;
  return entries.map((e) => ({ usec: Number(e[2]), command: e[3].slice(0, 3).join(" ").slice(0, 120) }));
}

/** INFO memory's used_memory: bytes allocated by Redis (what one more placement row costs). */
export async function usedMemory(redis: Redis): Promise<number> {
  const info = await redis.info("memory");
  const m = /^used_memory:(\d+)/m.exec(info);
  if (!m) throw new Error("INFO memory has no used_memory");
  return Number(m[1]);
}
