import { AccountTags } from "../auth/account-tags.ts";
import { createPassport } from "../auth/passport.ts";
import { WorkerSecrets } from "../auth/worker-secrets.ts";
import type { Config } from "../config/config.ts";
import { DurableKeys } from "../contract/durable-index.ts";
import type { AppDeps } from "../deps/app-deps.ts";
import type { RuntimeInfo } from "../deps/runtime-info.ts";
import { Fleet } from "../fleet/serving-fleet.ts";
import { createLogger, type Logger } from "../log/logger.ts";
import { fanOut, HealthCounters, type MetricsSink } from "../metrics/metrics-sink.ts";
import { TrafficHistory } from "../metrics/traffic-history.ts";
import { Keys } from "../redis/keys.ts";
import { RedisOutageGuard } from "../redis/outage-guard.ts";
import type { RedisPort } from "../redis/port.ts";
import { newSessionId } from "../registry/session-ids.ts";

export interface BootstrapOptions {
  config: Config;
  redis: RedisPort;
  runtime: RuntimeInfo;
  fetch?: typeof fetch;
  /** The forward's call to a worker; defaults to `fetch` with an AbortController. */
  log?: Logger;
  now?: () => number;
  /** Extra metrics (the Node entry's Prometheus registry). */
  metrics?: MetricsSink;
  /** The durability store's Redis when it is not Pinboard's own. */
  durableRedis?: RedisPort;
}

/** Wires the app's dependencies the same way for both entries. */
export function buildDeps(options: BootstrapOptions): AppDeps {
  const { config, runtime } = options;
  const redis = new RedisOutageGuard(options.redis);
  const now = options.now ?? (() => Date.now());
  const log = options.log ?? createLogger(config.logLevel);
  const fetchImpl = options.fetch ?? ((input, init) => fetch(input, init));
  const keys = new Keys(config.prefix, config.shards);
  const passport = createPassport(config.passport, { fetch: fetchImpl, now, log });
  const material = keyMaterial(config);
  const secrets = new WorkerSecrets(material, log);
  const accounts = new AccountTags(material);
  const fleet = new Fleet({ config, redis, keys, log, now, nodeId: `${runtime.label}-${newSessionId()}` });
  const counters = new HealthCounters();
  const history = new TrafficHistory({ now });
  const metrics = fanOut([counters, history, ...(options.metrics ? [options.metrics] : [])]);
  const durable = {
    redis: options.durableRedis ? new RedisOutageGuard(options.durableRedis) : redis,
    keys: new DurableKeys(config.durable.prefix),
  };
  return {
    config,
    redis,
    keys,
    now,
    fetch: fetchImpl,
    log,
    passport,
    secrets,
    accounts,
    fleet,
    runtime,
    metrics,
    counters,
    history,
    durable,
  };
}

/**
 * What worker secrets are sealed and accounts tagged under at rest: PINBOARD_SECRETS_KEY, else the
 * passport secret (parseConfig requires one with a JWKS).
 */
function keyMaterial(config: Config): string {
  const material = config.secretsKey ?? config.passport.secret;
  if (material === undefined || material === "")
    throw new Error("buildDeps: no key for worker secrets (set PINBOARD_SECRETS_KEY or PINBOARD_PASSPORT_SECRET)");
  return material;
}
