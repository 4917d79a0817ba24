import type { AccountTags } from "./auth/account-tags.ts";
import type { Passport, Principal } from "./auth/passport.ts";
import type { WorkerSecrets } from "./auth/worker-secrets.ts";
import type { Config } from "./config.ts";
import type { SyncJwsHs256 } from "./contract/attestation.ts";
import type { DurableKeys } from "./contract/durable-index.ts";
import type { UploadPipe } from "./data-plane/client-upload.ts";
import type { Logger } from "./log.ts";
import type { HealthCounters, MetricsSink } from "./metrics-sink.ts";
import type { TrafficHistory } from "./operator/traffic-history.ts";
import type { Keys } from "./redis/keys.ts";
import type { RedisPort } from "./redis/port.ts";
import type { Fleet } from "./serving-fleet.ts";

/**
 * What the runtime can do and tell about itself. The core asks these capabilities, never which
 * runtime it is on; `label` only names the node in ids and logs.
 */
export interface RuntimeInfo {
  label: string;
  /**
   * "request-bound": work outlives its request only when handed to the request's waitUntil, and
   * a client that goes away cancels the request's promises (Workers). "runs-on": a promise runs
   * to its end by itself, timers run between requests (Node).
   */
  backgroundWork: "request-bound" | "runs-on";
  /** The runtime's fetch hands over a decoded body for a Content-Encoding answer (undici does). */
  fetchDecodesBodies: boolean;
  /**
   * A native pass-through stream for a forwarded body that the runtime's fetch sends with the
   * client's framing (workerd's FixedLengthStream); without one the core counts the bytes itself.
   */
  uploadPipe?: UploadPipe;
  startedAt: number;
  rssBytes?: () => number;
  /**
   * The most subrequests (fetches, Redis REST calls) one invocation may make, where the platform
   * caps them: 50 on the Workers Free plan (Paid allows 10,000, which the runtime cannot tell).
   */
  subrequestsPerInvocation?: number;
  /** A synchronous HS256 signer for attestations, where the runtime has one (Node). */
  signJws?: SyncJwsHs256;
  /**
   * What the runtime's edge knows of a request's client, as forward headers that replace any the
   * client sent (Workers: CF-IPCountry from request.cf, CF-Visitor from the scheme). Absent
   * elsewhere: a client's own CF-* claims are dropped (header-hygiene.ts).
   */
  edgeHeaders?: (request: Request) => Record<string, string>;
}

/**
 * Everything the app core needs, built by buildDeps (src/bootstrap.ts) for each runtime adapter
 * (src/runtime/workers/isolate.ts, src/runtime/node/start-node.ts) and for the CLI's sweep-now.
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
    /** The principal's account tag, set by the worker routes (registry/guards.ts). */
    accountTag: string;
  };
}
