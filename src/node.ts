import cluster from "node:cluster";
import { getRequestListener } from "@hono/node-server";
import type { Registry } from "prom-client";
import { createPinboard } from "./app.ts";
import { buildDeps } from "./bootstrap.ts";
import { type Config, parseConfig } from "./config.ts";
import { createLogger } from "./log.ts";
import { clusterMetricsSource } from "./runtime/node/cluster-metrics.ts";
import { NodeDataPlane } from "./runtime/node/data-plane/server.ts";
import {
  describeDevPassport,
  describeMinting,
  durableRedisForWorkers,
  mintDevPassport,
} from "./runtime/node/dev-credentials.ts";
import { startListeners } from "./runtime/node/listeners.ts";
import { PrometheusMetrics } from "./runtime/node/metrics.ts";
import { type MetricsSource, mountMetricsRoute } from "./runtime/node/metrics-route.ts";
import { processCount, runProcessCluster } from "./runtime/node/process-cluster.ts";
import { probeRedis, redisFromConfig } from "./runtime/node/redis-from-config.ts";
import { nodeRuntime } from "./runtime/node/runtime-info.ts";
import { describeStartFailure, runServingProcess, SHUTDOWN_GRACE_MS } from "./runtime/node/serving-process.ts";
import { startSweeperTimer } from "./runtime/node/sweeper-timer.ts";

/**
 * The Node entry for self-hosting: the same Hono app on @hono/node-server, WebSocket upgrades
 * through the data plane (src/runtime/node/data-plane/), TCP Redis (or a private redis-server when
 * REDIS_URL is unset), the fleet claim on a timer, graceful shutdown.
 */
export interface RunningPinboard {
  url: string;
  /** The admin port's URL (registry, console, /openapi.json, /metrics) with PINBOARD_ADMIN_PORT. */
  adminUrl?: string;
  config: Config;
  stop(): Promise<void>;
}

export interface StartNodeOptions {
  /**
   * Where the development key is kept (`.pinboard/dev-passport-secret` under it) when no
   * passport key is configured; without it the key is random for this run. `npm start` passes
   * its working directory.
   */
  devKeyDir?: string;
  /**
   * What GET /metrics serves, given this process's registry (default: that registry). A process
   * of PINBOARD_PROCESSES > 1 passes clusterMetricsSource: the aggregate of every process.
   */
  metricsSource?: (local: Registry) => MetricsSource;
}

export async function startNode(
  env: Record<string, string | undefined> = process.env,
  options: StartNodeOptions = {},
): Promise<RunningPinboard> {
  let config = parseConfig(env);
  const log = createLogger(config.logLevel);
  let devBanner: ((url: string, durableRedisUrl?: string, adminUrl?: string) => string) | undefined;
  if (!config.passport.secret && !config.passport.jwks) {
    const dev = await mintDevPassport(options.devKeyDir);
    if (dev.keyFileError !== undefined)
      log.warn(`cannot save the development key (${dev.keyFileError}): it lasts for this run only`);
    config = { ...config, passport: { ...config.passport, secret: dev.secret } };
    devBanner = (url, durableRedisUrl, adminUrl) => describeDevPassport(dev, url, durableRedisUrl, adminUrl);
  }

  const redis = await redisFromConfig(config, log);
  if (!redis.embedded) {
    // A Redis that does not answer is no reason not to start (it may come up later), but the
    // operator hears about it now rather than from the first 503.
    const problem = await probeRedis(redis.port, config.redis.timeoutMs);
    if (problem !== undefined) {
      log.warn(
        `redis unreachable at ${redis.describe}: ${problem}. Pinboard keeps retrying; until Redis answers, /readyz is 503 and requests get 503 redis unavailable`,
        { redis: redis.describe, error: problem },
      );
    }
  }
  const metrics = config.metrics ? new PrometheusMetrics() : undefined;
  const deps = buildDeps({
    config,
    redis: redis.port,
    ...(metrics ? { metrics } : {}),
    ...(redis.durable ? { durableRedis: redis.durable } : {}),
    log,
    runtime: nodeRuntime(),
  });
  await deps.fleet.refresh();
  const renew = setInterval(() => void deps.fleet.refresh(), Math.max(250, Math.floor(config.leaseTtlMs / 3)));
  const sweeper = startSweeperTimer(deps);

  metrics?.bind(deps);
  if (config.admin.hostname !== undefined)
    log.warn(
      "PINBOARD_ADMIN_HOSTNAME applies to the Workers entry only; on Node, PINBOARD_ADMIN_PORT serves the operator surface apart",
    );
  const { app, admin, dataPlane } = createPinboard(deps, {
    ...(metrics
      ? { rootRoutes: (root) => mountMetricsRoute(root, deps, metrics, options.metricsSource?.(metrics.registry)) }
      : {}),
    peerAddress: (c) =>
      (c.env as { incoming?: { socket?: { remoteAddress?: string } } }).incoming?.socket?.remoteAddress ?? "",
    separateAdmin: config.admin.port !== undefined,
  });
  // The data plane is served on node:http's own objects; the Hono app (health, registry,
  // /metrics) gets every other request. No `websocket` option: the Hono adapter leaves upgrades
  // alone and the data plane takes them all. With PINBOARD_ADMIN_PORT the registry, the console,
  // /openapi.json and /metrics are on the admin listener instead (src/runtime/node/listeners.ts).
  const honoListener = getRequestListener(app.fetch, { hostname: config.host });
  const nodeDataPlane = new NodeDataPlane({ deps, dataPlane, fallback: honoListener, defaultHost: config.host });
  const listeners = await startListeners(config, {
    data: nodeDataPlane.listener,
    attach: (server) => nodeDataPlane.attach(server),
    ...(admin ? { admin: getRequestListener(admin.fetch, { hostname: config.host }) } : {}),
  });
  const { url, adminUrl } = listeners;
  log.info("pinboard listening", {
    url,
    ...(adminUrl ? { adminUrl } : {}),
    redis: redis.describe,
    serving: deps.fleet.peek().serving,
  });
  if (redis.embedded)
    console.log(`Redis: embedded redis-server at ${redis.embedded.url} (not persisted; stopped with Pinboard)`);
  if (devBanner) console.log(devBanner(url, durableRedisForWorkers(config, redis.embedded?.url), adminUrl));

  let stopping: Promise<void> | undefined;
  return {
    url,
    ...(adminUrl ? { adminUrl } : {}),
    config,
    stop() {
      stopping ??= (async () => {
        deps.fleet.draining = true;
        clearInterval(renew);
        await sweeper.stop();
        await nodeDataPlane.close();
        await listeners.close();
        await redis.port.close();
        await redis.durable?.close();
        await redis.embedded?.stop();
      })();
      return stopping;
    },
  };
}

async function main(): Promise<void> {
  if (cluster.isWorker) {
    // One of PINBOARD_PROCESSES, forked by the primary below with the shared Redis and key.
    return runServingProcess(() =>
      startNode(process.env, { devKeyDir: process.cwd(), metricsSource: clusterMetricsSource }),
    );
  }
  let processes: number;
  try {
    const config = parseConfig(process.env);
    processes = processCount(config.processes);
    if (processes > 1) return await runProcessCluster({ config, processes, devKeyDir: process.cwd() });
  } catch (err) {
    console.error(describeStartFailure(err));
    process.exit(1);
  }
  let running: RunningPinboard;
  try {
    running = await startNode(process.env, { devKeyDir: process.cwd() });
  } catch (err) {
    console.error(describeStartFailure(err));
    process.exit(1);
  }
  const minting = describeMinting(running.config.passport);
  if (minting !== undefined && process.env.PINBOARD_PASSPORT_SECRET) console.log(minting);
  const shutdown = (signal: string) => {
    console.error(`pinboard: ${signal}, shutting down`);
    const force = setTimeout(() => process.exit(1), SHUTDOWN_GRACE_MS);
    force.unref();
    running.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
