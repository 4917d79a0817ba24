import { z } from "zod";
import { describeIssues, unknownVariables } from "./config-issues.ts";

/**
 * Every setting of Pinboard, parsed by one schema from string variables: the process
 * environment on Node, env bindings and wrangler.toml vars on Workers. The README's
 * Configuration table lists the same names and defaults.
 */

const between = (min: number, max: number) =>
  max === Number.MAX_SAFE_INTEGER
    ? `expected a whole number of at least ${min}`
    : `expected an integer from ${min} to ${max}`;

const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z
    .string()
    .trim()
    .regex(/^\d+$/, between(min, max))
    .transform(Number)
    .pipe(z.number().int().min(min, between(min, max)).max(max, between(min, max)));

const bool = z
  .string()
  .trim()
  .toLowerCase()
  .pipe(z.enum(["1", "0", "true", "false", "yes", "no", "on", "off", ""], { error: "expected true or false" }))
  .transform((v) => v === "1" || v === "true" || v === "yes" || v === "on");

const list = z.string().transform((v) =>
  v
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s.length > 0),
);

const hostPort = z
  .string()
  .trim()
  .regex(/^[^\s:,]+:\d{1,5}$/, "expected host:port,host:port");

const basePath = z
  .string()
  .trim()
  .regex(/^(\/[A-Za-z0-9._~-]+)*\/?$/, "expected a path such as /pinboard")
  .transform((v) => v.replace(/\/+$/, ""));

const prefix = z.string().regex(/^[^\s{}]*$/, "expected a key prefix without whitespace or braces");

/** A URL with one of the given schemes ("redis" allows redis:// and rediss://). */
const url = (kind: "redis" | "http") =>
  z.url({
    protocol: kind === "redis" ? /^rediss?$/ : /^https?$/,
    error:
      kind === "redis"
        ? "expected a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379"
        : "expected an http:// or https:// URL",
  });

/** More processes than this is a typo, not a machine. */
const MAX_PROCESSES = 1024;

/** The variables, as strings in the environment. */
const variables = z.object({
  PORT: int(0, 65535).default(8787),
  HOST: z.string().trim().min(1, "expected a listen address such as 127.0.0.1 or 0.0.0.0").default("127.0.0.1"),
  PINBOARD_ADMIN_PORT: int(0, 65535).optional(),
  PINBOARD_ADMIN_HOSTNAME: z
    .string()
    .trim()
    .toLowerCase()
    .regex(
      /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/,
      "expected a host name such as pinboard-admin.example.com (no scheme, no port)",
    )
    .optional(),
  PINBOARD_HEADERS_TIMEOUT_MS: int(1, 3_600_000).default(10_000),
  PINBOARD_REQUEST_TIMEOUT_MS: int(0, 86_400_000).default(300_000),
  PINBOARD_MAX_CONNECTIONS: int(1).default(10_000),
  PINBOARD_PROCESSES: z
    .string()
    .trim()
    .toLowerCase()
    .refine(
      (v) => v === "auto" || (/^\d+$/.test(v) && Number(v) >= 1 && Number(v) <= MAX_PROCESSES),
      `expected an integer from 1 to ${MAX_PROCESSES} or auto`,
    )
    .transform((v): number | "auto" => (v === "auto" ? "auto" : Number(v)))
    .default(1),
  REDIS_URL: url("redis").optional(),
  REDIS_CLUSTER_NODES: list.pipe(z.array(hostPort).min(1, "expected host:port,host:port")).optional(),
  UPSTASH_REDIS_REST_URL: url("http").optional(),
  UPSTASH_REDIS_REST_TOKEN: z.string().min(1, "expected the REST token").optional(),
  PINBOARD_PREFIX: prefix.default("pinboard:"),
  PINBOARD_SHARDS: int(1, 16384).default(16),
  PINBOARD_HOSTNAME_AWARE: bool.default(false),
  PINBOARD_BASE_PATH: basePath.default(""),
  PINBOARD_LEASE_TTL_MS: int(1000, 3_600_000).default(15000),
  PINBOARD_VERIFY_TIMEOUT_MS: int(1, 60_000).default(2500),
  PINBOARD_FORWARD_TIMEOUT_MS: int(1, 3_600_000).default(30000),
  PINBOARD_MAX_INFLIGHT: int(1).default(1024),
  PINBOARD_MAX_WEBSOCKETS: int(1).default(1024),
  PINBOARD_WS_MAX_MESSAGE_BYTES: int(1, 1024 * 1024 * 1024).default(1024 * 1024),
  PINBOARD_WS_PING_INTERVAL_MS: int(100, 3_600_000).default(30000),
  PINBOARD_REDIS_TIMEOUT_MS: int(50, 60_000).default(2000),
  PINBOARD_PASSPORT_SECRET: z.string().min(32, "expected at least 32 characters").optional(),
  PINBOARD_PASSPORT_JWKS: z.string().trim().min(1, "expected a JWKS URL (https://…) or inline JWKS JSON").optional(),
  PINBOARD_PASSPORT_ISSUER: z.string().trim().min(1, "expected the required iss claim").optional(),
  PINBOARD_PASSPORT_AUDIENCE: z.string().trim().min(1, "expected the required aud claim").optional(),
  PINBOARD_SECRETS_KEY: z.string().min(32, "expected at least 32 characters").optional(),
  PINBOARD_FLEET_EPOCH: int(0).default(0),
  PINBOARD_TRUSTED_PROXIES: list.default([]),
  PINBOARD_BALANCE_FACTOR: z
    .string()
    .trim()
    .regex(/^\d+(\.\d+)?$/, "expected a number ≥ 1")
    .transform(Number)
    .pipe(z.number().min(1, "expected a number ≥ 1"))
    .default(2),
  PINBOARD_WAKE_TIMEOUT_MS: int(1, 600_000).default(15000),
  PINBOARD_SWEEP_INTERVAL_MS: int(1000, 3_600_000).default(15000),
  PINBOARD_METRICS: bool.default(true),
  PINBOARD_DURABLE_PREFIX: prefix.default("pinned:"),
  PINBOARD_DURABLE_REDIS_URL: url("redis").optional(),
  PINBOARD_SWEEP_BATCH: int(1, 10_000).default(50),
  PINBOARD_SWEEP_SUBREQUEST_BUDGET: int(20, 1_000_000).optional(),
  PINBOARD_AUDIT_MAX_ENTRIES: int(1, 10_000_000).default(10_000),
  PINBOARD_DATA_PLANE_RULES: z
    .string()
    .transform((v, ctx) => {
      try {
        return JSON.parse(v) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "expected JSON" });
        return z.NEVER;
      }
    })
    .pipe(
      z.record(
        z.string().regex(/^(\*|\/[A-Za-z0-9._~-]{1,128})$/, "expected namespace keys such as /threads or *"),
        z.object({ scopes: z.array(z.string().min(1)).default([]) }, { error: 'expected {"scopes": [...]}' }),
      ),
    )
    .optional(),
  PINBOARD_LOG_LEVEL: z
    .enum(["debug", "info", "warn", "error", "silent"], { error: "expected debug, info, warn, error or silent" })
    .default("info"),
});

/**
 * The schema of the whole configuration: the variables in, the Config the code reads out (named
 * for the code rather than for the environment). `Config` is this schema's output type.
 */
export const configSchema = variables.transform((raw) => ({
  port: raw.PORT,
  host: raw.HOST,
  /** The operator surface apart from the data plane: its own port (Node) or hostname (Workers). */
  admin: { port: raw.PINBOARD_ADMIN_PORT, hostname: raw.PINBOARD_ADMIN_HOSTNAME },
  /** Node: node:http's limits on every listener (headersTimeout, requestTimeout, maxConnections). */
  listeners: {
    headersTimeoutMs: raw.PINBOARD_HEADERS_TIMEOUT_MS,
    /** 0 turns it off. */
    requestTimeoutMs: raw.PINBOARD_REQUEST_TIMEOUT_MS,
    maxConnections: raw.PINBOARD_MAX_CONNECTIONS,
  },
  /** Node: processes serving the port; "auto" is one per CPU, which only the Node entry can count. */
  processes: raw.PINBOARD_PROCESSES,
  redis: {
    url: raw.REDIS_URL,
    clusterNodes: raw.REDIS_CLUSTER_NODES,
    restUrl: raw.UPSTASH_REDIS_REST_URL,
    restToken: raw.UPSTASH_REDIS_REST_TOKEN,
    /** How long one Redis command (Node) or REST request (Workers) may take before the request gets 503 (ms). */
    timeoutMs: raw.PINBOARD_REDIS_TIMEOUT_MS,
  },
  prefix: raw.PINBOARD_PREFIX,
  shards: raw.PINBOARD_SHARDS,
  hostnameAware: raw.PINBOARD_HOSTNAME_AWARE,
  basePath: raw.PINBOARD_BASE_PATH,
  leaseTtlMs: raw.PINBOARD_LEASE_TTL_MS,
  verifyTimeoutMs: raw.PINBOARD_VERIFY_TIMEOUT_MS,
  forwardTimeoutMs: raw.PINBOARD_FORWARD_TIMEOUT_MS,
  maxInflight: raw.PINBOARD_MAX_INFLIGHT,
  webSockets: {
    /** Open proxied WebSockets per worker on this node, apart from the inflight cap. */
    maxPerWorker: raw.PINBOARD_MAX_WEBSOCKETS,
    /** Node: the largest message either side may send (fragments summed); past it both close 1009. */
    maxMessageBytes: raw.PINBOARD_WS_MAX_MESSAGE_BYTES,
    /** Node: each side is pinged this often; a side that has not answered by the next ping is cut. */
    pingIntervalMs: raw.PINBOARD_WS_PING_INTERVAL_MS,
  },
  passport: {
    secret: raw.PINBOARD_PASSPORT_SECRET,
    jwks: raw.PINBOARD_PASSPORT_JWKS,
    issuer: raw.PINBOARD_PASSPORT_ISSUER,
    audience: raw.PINBOARD_PASSPORT_AUDIENCE,
  },
  /**
   * What the key that seals worker secrets at rest is derived from (auth/worker-secrets.ts):
   * PINBOARD_SECRETS_KEY, else the passport secret. Required with a JWKS, which shares no secret.
   */
  secretsKey: raw.PINBOARD_SECRETS_KEY,
  fleetEpoch: raw.PINBOARD_FLEET_EPOCH,
  trustedProxies: raw.PINBOARD_TRUSTED_PROXIES,
  balanceFactor: raw.PINBOARD_BALANCE_FACTOR,
  wakeTimeoutMs: raw.PINBOARD_WAKE_TIMEOUT_MS,
  sweepIntervalMs: raw.PINBOARD_SWEEP_INTERVAL_MS,
  metrics: raw.PINBOARD_METRICS,
  durable: {
    /** Key prefix of the worker library's durability store (its index lists durable instances). */
    prefix: raw.PINBOARD_DURABLE_PREFIX,
    /** Node: the durability store's Redis when it is not Pinboard's own. */
    redisUrl: raw.PINBOARD_DURABLE_REDIS_URL,
  },
  /** Work items (wakes, resurrections, alarms) one sweep pass handles at most, each. */
  sweepBatch: raw.PINBOARD_SWEEP_BATCH,
  /**
   * Requests (Redis calls, worker calls) one sweep pass may make at most; absent = the runtime's
   * default (45 on Workers, under the Free plan's 50 subrequests; no limit on Node).
   */
  sweepSubrequestBudget: raw.PINBOARD_SWEEP_SUBREQUEST_BUDGET,
  /** The audit trail's cap (entries); Redis trims it approximately (`MAXLEN ~`, docs/operations.md). */
  auditMaxEntries: raw.PINBOARD_AUDIT_MAX_ENTRIES,
  /** Data-plane passport rules per namespace ("*" for the rest); absent = no data-plane passport. */
  dataPlaneRules:
    raw.PINBOARD_DATA_PLANE_RULES && Object.keys(raw.PINBOARD_DATA_PLANE_RULES).length > 0
      ? raw.PINBOARD_DATA_PLANE_RULES
      : undefined,
  logLevel: raw.PINBOARD_LOG_LEVEL,
}));

export type Config = z.output<typeof configSchema>;

export class ConfigError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid configuration:\n${issues.map((i) => `  ${i}`).join("\n")}`);
    this.name = "ConfigError";
  }
}

/** The refusal of a JWKS passport without a key for worker secrets. */
export const SECRETS_KEY_WITH_JWKS =
  "PINBOARD_SECRETS_KEY: required with PINBOARD_PASSPORT_JWKS (at least 32 characters): " +
  "worker secrets are encrypted at rest under a key derived from it";

/** The variable names the schema knows, for entries that forward them (npm run dev). */
export const configVariableNames: readonly string[] = Object.keys(variables.shape);

/**
 * Parses string variables into a Config; throws ConfigError naming each bad variable, and each
 * PINBOARD_* variable it does not know (a misspelt setting would otherwise be ignored silently).
 */
export function parseConfig(env: Record<string, unknown>): Config {
  const unknown = unknownVariables(env, configVariableNames);
  if (unknown.length) throw new ConfigError(unknown);
  const strings: Record<string, string> = {};
  for (const key of configVariableNames) {
    const value = env[key];
    if (value === undefined || value === null || value === "") continue;
    strings[key] = typeof value === "string" ? value : String(value);
  }
  const parsed = configSchema.safeParse(strings);
  if (!parsed.success) throw new ConfigError(describeIssues(parsed.error.issues, strings));
  const config = parsed.data;
  if (config.passport.secret && config.passport.jwks) {
    throw new ConfigError([
      "PINBOARD_PASSPORT_JWKS: set either PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS, not both",
    ]);
  }
  if (config.passport.jwks && !config.secretsKey) {
    throw new ConfigError([SECRETS_KEY_WITH_JWKS]);
  }
  if (config.redis.restUrl && !config.redis.restToken) {
    throw new ConfigError(["UPSTASH_REDIS_REST_TOKEN: required with UPSTASH_REDIS_REST_URL"]);
  }
  if (config.admin.port !== undefined && config.admin.port !== 0 && config.admin.port === config.port) {
    throw new ConfigError([`PINBOARD_ADMIN_PORT: expected a port other than PORT (${config.port})`]);
  }
  const { headersTimeoutMs, requestTimeoutMs } = config.listeners;
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs) {
    throw new ConfigError([
      `PINBOARD_HEADERS_TIMEOUT_MS: expected at most PINBOARD_REQUEST_TIMEOUT_MS (${requestTimeoutMs})`,
    ]);
  }
  return config;
}
