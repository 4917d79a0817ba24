import { type RedisRestServer, startRedisRest } from "../../scripts/redis-rest.ts";
import { UpstashRedis } from "../../src/redis/rest/upstash-redis.ts";
import { startTestRedis, type TestRedis } from "./redis.ts";
import { useForFile } from "./use-for-file.ts";

/** A private Redis (a cluster when the run is one), the REST bridge over it, and a client of the bridge. */
export interface RestBridge {
  t: TestRedis;
  bridge: RedisRestServer;
  rest: UpstashRedis;
  stop(): Promise<void>;
}

/** What the bridge talks to: every node of a cluster, or the one server. */
export const bridgeTarget = (redis: TestRedis) =>
  redis.clusterNodes ? { clusterNodes: redis.clusterNodes.split(",") } : { redisUrl: redis.url };

export async function startRestBridge(token: string): Promise<RestBridge> {
  const t = await startTestRedis();
  const bridge = await startRedisRest({ token, ...bridgeTarget(t) });
  const rest = new UpstashRedis({ url: bridge.url, token, timeoutMs: 2000 });
  return {
    t,
    bridge,
    rest,
    async stop() {
      await rest.close();
      await bridge.close();
      await t.stop();
    },
  };
}

/** startRestBridge for the whole test file: `ready` hands the parts over before its tests; stopped after them. */
export function useRestBridge(token: string, ready: (f: RestBridge) => void): void {
  useForFile(
    () => startRestBridge(token),
    (f) => f.stop(),
    ready,
  );
}
