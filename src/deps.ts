import type { Passport, Principal } from "./auth/passport.ts";
import type { SyncJwsHs256 } from "./contract/attestation.ts";
import type { Config } from "./config.ts";
import type { Fleet } from "./serving-fleet.ts";
import type { Logger } from "./log.ts";
import type { HealthCounters, MetricsSink } from "./metrics-sink.ts";
import type { DurableKeys } from "./contract/durable-index.ts";
import type { Keys } from "./redis/keys.ts";
import type { RedisPort } from "./redis/port.ts";

/** What the runtime can tell about itself (Node has RSS; Workers does not). */
export interface RuntimeInfo {
  name: "node" | "workers";
  startedAt: number;
  rssBytes?: () => number;
  /** A synchronous HS256 signer for attestations, where the runtime has one (Node). */
  signJws?: SyncJwsHs256;
}

/** Everything the app core needs, built by an entry (src/worker.ts, src/node.ts). */
export interface AppDeps {
  config: Config;
  redis: RedisPort;
  keys: Keys;
  /** Milliseconds since the epoch (JS-side clock; Lua scripts use Redis TIME). */
  now: () => number;
  fetch: typeof fetch;
  /** How a forward calls a worker (fetch with an AbortController unless the entry has better). */
  log: Logger;
  passport: Passport;
  fleet: Fleet;
  runtime: RuntimeInfo;
  metrics: MetricsSink;
  /** Node-local counters behind /registry/health (also fed through `metrics`). */
  counters: HealthCounters;
  /** The worker library's durability store index, read by the sweeper. */
  durable: { redis: RedisPort; keys: DurableKeys };
}

/** Hono's environment type for the app: variables set by middleware. */
export interface AppEnv {
  Variables: {
    principal: Principal;
  };
}
