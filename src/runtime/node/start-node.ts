import { getRequestListener } from "@hono/node-server";
import type { Registry } from "prom-client";
import { createPinboard } from "../../app/app.ts";
import { buildDeps } from "../../app/bootstrap.ts";
import { type Config, parseConfig } from "../../config/config.ts";
import type { AppDeps } from "../../deps/app-deps.ts";
import { createLogger, type Logger } from "../../log/logger.ts";
import {
  type DevPassport,
  devKeyExposureWarning,
  durableRedisForWorkers,
  mintDevPassport,
} from "./dev-store/dev-credentials.ts";
import { type DevEnvFile, printDevBanner } from "./dev-store/dev-env-file.ts";
import { PrometheusMetrics } from "./metrics/metrics.ts";
import { type MetricsSource, mountMetricsRoute } from "./metrics/metrics-route.ts";
import { type Listeners, startListeners } from "./process/listeners.ts";
import { type NodeRedis, probeRedis, redisFromConfig } from "./redis/redis-from-config.ts";
import { nodeRuntime } from "./runtime-info.ts";
import { startSweeperTimer } from "./sweeper-timer.ts";
import { NodeDataPlane } from "./transport/server.ts";

/**
 * A Pinboard running on Node (src/node.ts): the same Hono app on @hono/node-server, WebSocket
 * upgrades through the data plane (src/runtime/node/transport/), TCP Redis (or a private
 * redis-server when REDIS_URL is unset), the fleet claim on a timer, graceful shutdown.
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
   * The folder whose `.pinboard/` keeps the development key (when no passport key is configured)
   * and the embedded Redis's data (when no Redis is); without it both last for this run only.
   * `npm start` and `pinboard serve` pass their working directory.
   */
  devDir?: string;
  /**
   * What GET /metrics serves, given this process's registry (default: that registry). A process
   * of PINBOARD_PROCESSES > 1 passes clusterMetricsSource: the aggregate of every process.
   */
  metricsSource?: (local: Registry) => MetricsSource;
  /** Print the start banner (Redis, console, credentials); false in the processes of PINBOARD_PROCESSES, whose primary prints it once. */
  banner?: boolean;
}

/** Starts one Pinboard process from the environment's settings; resolves once it listens. */
export async function startNode(
  env: Record<string, string | undefined> = process.env,
  options: StartNodeOptions = {},
): Promise<RunningPinboard> {
  const parsed = parseConfig(env);
  const log = createLogger(parsed.logLevel);
  const { config, dev } = await withDevPassport(parsed, options.devDir, log);
  const { redis, problem } = await connectRedis(config, log, options.devDir);
  const metrics = config.metrics ? new PrometheusMetrics() : undefined;
  const deps = buildDeps({
    config,
    redis: redis.port,
    ...(metrics ? { metrics } : {}),
    ...(redis.durable ? { durableRedis: redis.durable } : {}),
    log,
    runtime: nodeRuntime(),
  });
  metrics?.bind(deps);
  if (config.admin.hostname !== undefined)
    log.warn(
      "PINBOARD_ADMIN_HOSTNAME applies to the Workers entry only; " +
        "on Node, PINBOARD_ADMIN_PORT serves the operator surface apart",
    );
  // Bound first: a port in use fails the start before the fleet is claimed or anything says it serves.
  const { nodeDataPlane, listeners } = await serve(config, deps, metrics, options).catch(async (err: unknown) => {
    await closeRedis(redis);
    throw err;
  });
  await deps.fleet.refresh();
  const renew = setInterval(() => void deps.fleet.refresh(), Math.max(250, Math.floor(config.leaseTtlMs / 3)));
  const sweeper = startSweeperTimer(deps);
  const { url, adminUrl } = listeners;
  log.info("pinboard listening", {
    url,
    ...(adminUrl ? { adminUrl } : {}),
    redis: redis.describe,
    serving: deps.fleet.peek().serving,
  });
  const envFile =
    options.banner !== false
      ? await printStartBanner(config, redis, dev, { ...listeners, devDir: options.devDir }, problem)
      : undefined;

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
        await closeRedis(redis);
        await envFile?.remove();
      })();
      return stopping;
    },
  };
}

async function closeRedis(redis: NodeRedis): Promise<void> {
  await redis.port.close();
  await redis.durable?.close();
  await redis.embedded?.stop();
}

/**
 * Without a configured passport key: the config with the development key (kept under
 * `devDir` when it can be), and the credentials minted with it for the start banner.
 */
async function withDevPassport(
  config: Config,
  devDir: string | undefined,
  log: Logger,
): Promise<{ config: Config; dev?: DevPassport }> {
  if (config.passport.secret || config.passport.jwks) return { config };
  const dev = await mintDevPassport(devDir);
  if (dev.keyFileError !== undefined)
    log.warn(`cannot save the development key (${dev.keyFileError}): it lasts for this run only`);
  const exposure = devKeyExposureWarning(config.host);
  if (exposure !== undefined) log.warn(exposure);
  return { config: { ...config, passport: { ...config.passport, secret: dev.secret } }, dev };
}

/**
 * The configured Redis (or the dev store), probed once when it is not Pinboard's own; `problem`
 * says why it did not answer.
 */
async function connectRedis(
  config: Config,
  log: Logger,
  devDir: string | undefined,
): Promise<{ redis: NodeRedis; problem?: string }> {
  const redis = await redisFromConfig(config, log, devDir);
  if (redis.embedded) return { redis };
  // A Redis that does not answer is no reason not to start (it may come up later), but the
  // operator hears about it now rather than from the first 503.
  const problem = await probeRedis(redis.port, config.redis.timeoutMs);
  if (problem !== undefined) {
    log.warn(
      `redis unreachable at ${redis.describe}: ${problem}. Pinboard keeps retrying; ` +
        "until Redis answers, /readyz is 503 and requests get 503 redis unavailable",
      { redis: redis.describe, error: problem },
    );
    return { redis, problem };
  }
  return { redis };
}

/**
 * The data plane is served on node:http's own objects; the Hono app (health, registry,
 * /metrics) gets every other request. No `websocket` option: the Hono adapter leaves upgrades
 * alone and the data plane takes them all. With PINBOARD_ADMIN_PORT the registry, the console,
 * /openapi.json and /metrics are on the admin listener instead (listeners.ts).
 */
async function serve(
  config: Config,
  deps: AppDeps,
  metrics: PrometheusMetrics | undefined,
  options: StartNodeOptions,
): Promise<{ nodeDataPlane: NodeDataPlane; listeners: Listeners }> {
  const { app, admin, dataPlane } = createPinboard(deps, {
    ...(metrics
      ? { rootRoutes: (root) => mountMetricsRoute(root, deps, metrics, options.metricsSource?.(metrics.registry)) }
      : {}),
    peerAddress: (c) =>
      (c.env as { incoming?: { socket?: { remoteAddress?: string } } }).incoming?.socket?.remoteAddress ?? "",
    separateAdmin: config.admin.port !== undefined,
  });
  const honoListener = getRequestListener(app.fetch, { hostname: config.host });
  const nodeDataPlane = new NodeDataPlane({ deps, dataPlane, fallback: honoListener, defaultHost: config.host });
  const listeners = await startListeners(config, {
    data: nodeDataPlane.listener,
    attach: (server) => nodeDataPlane.attach(server),
    ...(admin ? { admin: getRequestListener(admin.fetch, { hostname: config.host }) } : {}),
  });
  return { nodeDataPlane, listeners };
}

/**
 * What the operator reads on the terminal once Pinboard listens: the embedded Redis, the console,
 * where the development credentials are; with a Redis that did not answer, that it is not ready yet.
 */
async function printStartBanner(
  config: Config,
  redis: NodeRedis,
  dev: DevPassport | undefined,
  where: { url: string; adminUrl?: string; devDir: string | undefined },
  redisProblem: string | undefined,
): Promise<DevEnvFile | undefined> {
  if (redis.embedded) console.log(`Redis: ${redis.embedded.describe}; stopped with Pinboard`);
  console.log(`Console: ${where.adminUrl ?? where.url}/console`);
  const envFile = dev
    ? await printDevBanner(dev, { ...where, durableRedisUrl: durableRedisForWorkers(config, redis.embedded) })
    : undefined;
  if (redisProblem !== undefined)
    console.log(
      `Not ready: ${redis.describe} does not answer (${redisProblem}). ` +
        "Requests get 503 redis unavailable and /readyz is 503 until it does; check REDIS_URL and that Redis runs.",
    );
  return envFile;
}
