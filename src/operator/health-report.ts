import type { AppDeps } from "../deps/app-deps.ts";

/** What this module uses of the app's dependencies. */
export type HealthDeps = Pick<AppDeps, "config" | "redis" | "keys" | "now" | "log" | "runtime" | "counters">;

export interface HealthReport {
  resolutions: Record<string, number>;
  connections: number;
  quarantineMs: number;
  uptimeMs: number;
  rssBytes?: number;
}

/**
 * GET /registry/health for this node. It answers while booting or draining; when Redis cannot
 * be read the cold-start window is reported as unknown by a full lease.
 */
export async function healthReport(deps: HealthDeps): Promise<HealthReport> {
  const { keys, config, counters } = deps;
  let quarantineMs = 0;
  try {
    const [now, ...boots] = await Promise.all([
      deps.redis.timeMs(),
      ...keys.allBuckets().map((b) => deps.redis.get(keys.bootTime(b))),
    ]);
    for (const boot of boots) {
      if (boot !== null) quarantineMs = Math.max(quarantineMs, Math.ceil(Number(boot) + config.leaseTtlMs - now));
    }
  } catch (err) {
    deps.log.warn("health: redis unreadable", { error: err instanceof Error ? err.message : String(err) });
    quarantineMs = config.leaseTtlMs;
  }
  return {
    resolutions: { ...counters.resolutions },
    connections: counters.open,
    quarantineMs,
    uptimeMs: deps.now() - deps.runtime.startedAt,
    ...(deps.runtime.rssBytes ? { rssBytes: deps.runtime.rssBytes() } : {}),
  };
}
