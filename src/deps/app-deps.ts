import type { AccountTags } from "../auth/account-tags.ts";
import type { Passport, Principal } from "../auth/passport.ts";
import type { WorkerSecrets } from "../auth/worker-secrets.ts";
import type { Config } from "../config/config.ts";
import type { DurableKeys } from "../contract/durable-index.ts";
import type { Fleet } from "../fleet/serving-fleet.ts";
import type { Logger } from "../log/logger.ts";
import type { HealthCounters, MetricsSink } from "../metrics/metrics-sink.ts";
import type { TrafficHistory } from "../metrics/traffic-history.ts";
import type { Keys } from "../redis/keys.ts";
import type { RedisPort } from "../redis/port.ts";
import type { RuntimeInfo } from "./runtime-info.ts";

/**
 * Everything the app core needs, built by buildDeps (src/app/bootstrap.ts) for each runtime adapter
 * (src/runtime/cloudflare/isolate.ts, src/runtime/node/start-node.ts) and for the CLI's sweep-now.
 */
export interface AppDeps {
  config: Config;
  redis: RedisPort;
  keys: Keys;
  /** Milliseconds since the epoch (JS-side clock; Lua scripts use Redis TIME). */
  now: () => number;
  /** How the core calls workers and JWKS URLs (a Node transport may forward on its own stack). */
  fetch: typeof fetch;
  log: Logger;
  passport: Passport;
  /** Seals worker secrets for Redis and opens them again (auth/worker-secrets.ts). */
  secrets: WorkerSecrets;
  /** Tags accounts for Redis (auth/account-tags.ts). */
  accounts: AccountTags;
  fleet: Fleet;
  runtime: RuntimeInfo;
  metrics: MetricsSink;
  /** Node-local counters behind /registry/health (also fed through `metrics`). */
  counters: HealthCounters;
  /** This node's (isolate's) last 15 minutes of traffic behind /registry/history (fed through `metrics`). */
  history: TrafficHistory;
  /** The worker library's durability store index, read by the sweeper. */
  durable: { redis: RedisPort; keys: DurableKeys };
}

/** Hono's environment type for the app: variables set by middleware. */
export interface AppEnv {
  Variables: {
    principal: Principal;
    /** The principal's account tag, set by the worker routes (registry/access.ts). */
    accountTag: string;
  };
}
