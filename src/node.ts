import { getRequestListener } from "@hono/node-server";
import cluster from "node:cluster";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { createPinboard } from "./app.ts";
import { buildDeps } from "./bootstrap.ts";
import { parseConfig, type Config } from "./config.ts";
import { createLogger } from "./log.ts";
import { describeDevPassport, describeMinting, durableRedisForWorkers, mintDevPassport } from "./node/dev-credentials.ts";
import { probeRedis, redisFromConfig } from "./node/redis-from-config.ts";
import { startSweeperTimer } from "./node/sweeper-timer.ts";
import { PrometheusMetrics } from "./node/metrics.ts";
import { mountMetricsRoute, type MetricsSource } from "./node/metrics-route.ts";
import { clusterMetricsSource } from "./node/cluster-metrics.ts";
import { processCount, runProcessCluster } from "./node/process-cluster.ts";
import { describeStartFailure, runServingProcess, SHUTDOWN_GRACE_MS } from "./node/serving-process.ts";
import { NodeDataPlane } from "./node/data-plane/server.ts";

/** How long an idle client connection is kept (announced as Keep-Alive: timeout=65). */
const CLIENT_KEEP_ALIVE_MS = 65_000;

/**
 * The Node entry for self-hosting: the same Hono app on @hono/node-server, WebSocket upgrades
 * through the data plane (src/node/data-plane/), TCP Redis (or a private redis-server when
 * REDIS_URL is unset), the fleet claim on a timer, graceful shutdown.
 */
export interface RunningPinboard {
  url: string;
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

export async function startNode(env: Record<string, string | undefined> = process.env, options: StartNodeOptions = {}): Promise<RunningPinboard> {
  let config = parseConfig(env);
  const log = createLogger(config.logLevel);
  let devBanner: ((url: string, durableRedisUrl?: string) => string) | undefined;
  if (!config.passport.secret && !config.passport.jwks) {
    const dev = await mintDevPassport(options.devKeyDir);
    if (dev.keyFileError !== undefined) log.warn(`cannot save the development key (${dev.keyFileError}): it lasts for this run only`);
    config = { ...config, passport: { ...config.passport, secret: dev.secret } };
    devBanner = (url, durableRedisUrl) => describeDevPassport(dev, url, durableRedisUrl);
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
    runtime: { name: "node", startedAt: Date.now(), rssBytes: () => process.memoryUsage.rss() },
  });
  await deps.fleet.refresh();
  const renew = setInterval(() => void deps.fleet.refresh(), Math.max(250, Math.floor(config.leaseTtlMs / 3)));
  const sweeper = startSweeperTimer(deps);

  metrics?.bind(deps);
  const { app, dataPlane } = createPinboard(deps, {
    ...(metrics ? { rootRoutes: (root) => mountMetricsRoute(root, deps, metrics, options.metricsSource?.(metrics.registry)) } : {}),
    peerAddress: (c) => (c.env as { incoming?: { socket?: { remoteAddress?: string } } }).incoming?.socket?.remoteAddress ?? "",
  });
  // The data plane is served on node:http's own objects; the Hono app (health, registry,
  // /metrics) gets every other request. No `websocket` option: the Hono adapter leaves upgrades
  // alone and the data plane takes them all. requireHostHeader off: a request without Host gets
  // the protocol's 400 missing Host header from the app, not Node's bare 400.
  const honoListener = getRequestListener(app.fetch, { hostname: config.host });
  const nodeDataPlane = new NodeDataPlane({ deps, dataPlane, fallback: honoListener, defaultHost: config.host });
  const server = createServer({ requireHostHeader: false }, nodeDataPlane.listener);
  nodeDataPlane.attach(server);
  server.listen(config.port, config.host);
  // Idle client connections stay open longer than a load balancer's usual 60 s idle timeout, so
  // a client or balancer never sends on a connection Pinboard has just closed (Node's 5 s default
  // races any client that keeps connections longer, and shows up as their 502s).
  server.keepAliveTimeout = CLIENT_KEEP_ALIVE_MS;
  server.headersTimeout = CLIENT_KEEP_ALIVE_MS + 1000;
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  const address = server.address() as AddressInfo;
  const host = address.family === "IPv6" ? `[${address.address}]` : address.address;
  const url = `http://${host}:${address.port}${config.basePath}`;
  log.info("pinboard listening", { url, redis: redis.describe, serving: deps.fleet.peek().serving });
  if (redis.embedded) console.log(`Redis: embedded redis-server at ${redis.embedded.url} (not persisted; stopped with Pinboard)`);
  if (devBanner) console.log(devBanner(url, durableRedisForWorkers(config, redis.embedded?.url)));

  let stopping: Promise<void> | undefined;
  return {
    url,
    config,
    stop() {
      stopping ??= (async () => {
        deps.fleet.draining = true;
        clearInterval(renew);
        await sweeper.stop();
        await nodeDataPlane.close();
        await new Promise<void>((resolve) => {
          server.close(() => resolve());
          server.closeIdleConnections();
        });
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
    return runServingProcess(() => startNode(process.env, { devKeyDir: process.cwd(), metricsSource: clusterMetricsSource }));
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
    running.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
}

if (import.meta.url === `file://${process.argv[1]}`) void main();
