import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Hono } from "hono";
import { createPinboard } from "../../src/app/app.ts";
import { buildDeps } from "../../src/app/bootstrap.ts";
import { parseConfig } from "../../src/config/config.ts";
import type { AppDeps, AppEnv } from "../../src/deps/app-deps.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { MetricsSink } from "../../src/metrics/metrics-sink.ts";
import { cloudflarePeer } from "../../src/runtime/cloudflare/isolate.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { TEST_PASSPORT_SECRET } from "./pinboard-app.ts";
import { type RedisTarget, redisTargetEnv } from "./redis.ts";

export interface ServedPinboard {
  app: Hono<AppEnv>;
  deps: AppDeps;
  /** The app served on loopback by @hono/node-server, so real workers can register with it. */
  url: string;
  close(): Promise<void>;
}

/**
 * A Pinboard app built as pinboard-app.ts builds it (buildDeps + createPinboard on a test's private
 * Redis), with the two injection points the entries themselves use: the JS clock `now` and an
 * extra metrics sink (the Node entry's Prometheus registry goes there). It is also served over
 * HTTP on loopback, so workers that register over HTTP (hostile-worker.ts, the worker library)
 * can use it.
 */
export async function startServedPinboard(
  target: RedisTarget,
  options: { env?: Record<string, string>; now?: () => number; metrics?: MetricsSink } = {},
): Promise<ServedPinboard> {
  const config = parseConfig({
    ...redisTargetEnv(target),
    PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
    PINBOARD_LOG_LEVEL: "silent",
    ...options.env,
  });
  const redis = new TcpRedis(
    config.redis.clusterNodes ? { clusterNodes: config.redis.clusterNodes } : { url: config.redis.url! },
  );
  const deps = buildDeps({
    config,
    redis,
    // Node's capabilities without RSS or the synchronous signer: attestations are signed by jose,
    // as on the Workers entry.
    runtime: { label: "node", backgroundWork: "runs-on", fetchDecodesBodies: true, startedAt: Date.now() },
    log: createLogger(config.logLevel),
    ...(options.now ? { now: options.now } : {}),
    ...(options.metrics ? { metrics: options.metrics } : {}),
  });
  await deps.fleet.refresh();
  // The peer as Workers reads it (CF-Connecting-IP): these tests name a client's address with it.
  const app = createPinboard(deps, { peerAddress: cloudflarePeer }).app;
  const server = await new Promise<Server>((resolve) => {
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" }, () => resolve(s as Server)) as Server;
  });
  const { port } = server.address() as AddressInfo;
  return {
    app,
    deps,
    url: `http://127.0.0.1:${port}`,
    async close() {
      await new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      });
      await redis.close();
    },
  };
}

/** A metrics sink that only hears what `on` asks for; every other call is dropped. */
export function listeningSink(on: Partial<MetricsSink>): MetricsSink {
  return {
    resolution: (outcome) => on.resolution?.(outcome),
    forward: (status, seconds, answeredBy) => on.forward?.(status, seconds, answeredBy),
    watchInflight: (read) => on.watchInflight?.(read),
    watchWebSockets: (read) => on.watchWebSockets?.(read),
    connections: (delta) => on.connections?.(delta),
    script: (name, seconds) => on.script?.(name, seconds),
    sweep: (kind, count) => on.sweep?.(kind, count),
  };
}
