import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "../../src/config/config.ts";

/** The issues of the ConfigError `env` is refused with (failing the test where it is accepted). */
function refused(env: Record<string, string>): string[] {
  try {
    parseConfig(env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).issues;
  }
  return expect.unreachable("accepted");
}

describe("configuration", () => {
  it("applies the documented defaults", () => {
    const config = parseConfig({});
    expect(config).toMatchObject({
      port: 8787,
      prefix: "pinboard:",
      leaseTtlMs: 15000,
      verifyTimeoutMs: 2500,
      forwardTimeoutMs: 30000,
      maxInflight: 1024,
      webSockets: { maxPerWorker: 1024, maxMessageBytes: 1048576, pingIntervalMs: 30000 },
      fleetEpoch: 0,
      hostnameAware: false,
      basePath: "",
    });
  });

  it("names every bad variable", () => {
    try {
      parseConfig({
        PINBOARD_SHARDS: "zero",
        PINBOARD_LEASE_TTL_MS: "-5",
        PINBOARD_HOSTNAME_AWARE: "perhaps",
        REDIS_CLUSTER_NODES: "a,b",
      });
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const message = (err as Error).message;
      for (const name of [
        "PINBOARD_SHARDS",
        "PINBOARD_LEASE_TTL_MS",
        "PINBOARD_HOSTNAME_AWARE",
        "REDIS_CLUSTER_NODES",
      ]) {
        expect(message).toContain(name);
      }
    }
  });

  it("says the variable and what it expects in plain words, never zod's own text", () => {
    const cases: Array<[Record<string, string>, string]> = [
      [{ PINBOARD_SHARDS: "0" }, 'PINBOARD_SHARDS: expected an integer from 1 to 16384, got "0"'],
      [{ PINBOARD_LEASE_TTL_MS: "abc" }, 'PINBOARD_LEASE_TTL_MS: expected an integer from 1000 to 3600000, got "abc"'],
      [{ PINBOARD_HOSTNAME_AWARE: "maybe" }, 'PINBOARD_HOSTNAME_AWARE: expected true or false, got "maybe"'],
      [{ PORT: "99999" }, 'PORT: expected an integer from 0 to 65535, got "99999"'],
      [{ PINBOARD_MAX_INFLIGHT: "0" }, 'PINBOARD_MAX_INFLIGHT: expected a whole number of at least 1, got "0"'],
      [{ PINBOARD_MAX_WEBSOCKETS: "0" }, 'PINBOARD_MAX_WEBSOCKETS: expected a whole number of at least 1, got "0"'],
      [
        { PINBOARD_WS_MAX_MESSAGE_BYTES: "1MiB" },
        'PINBOARD_WS_MAX_MESSAGE_BYTES: expected an integer from 1 to 1073741824, got "1MiB"',
      ],
      [
        { PINBOARD_WS_PING_INTERVAL_MS: "10" },
        'PINBOARD_WS_PING_INTERVAL_MS: expected an integer from 100 to 3600000, got "10"',
      ],
      [{ PINBOARD_LOG_LEVEL: "loud" }, 'PINBOARD_LOG_LEVEL: expected debug, info, warn, error or silent, got "loud"'],
      [{ REDIS_CLUSTER_NODES: "a,b" }, 'REDIS_CLUSTER_NODES: expected host:port,host:port, got "a,b"'],
      [
        { PINBOARD_DATA_PLANE_RULES: "[1]" },
        'PINBOARD_DATA_PLANE_RULES: expected JSON such as {"/threads": {"scopes": ["threads:write"]}',
      ],
      // Secrets and URLs that may carry a password are not echoed.
      [{ PINBOARD_PASSPORT_SECRET: "short-secret" }, "PINBOARD_PASSPORT_SECRET: expected at least 32 characters"],
      [
        { REDIS_URL: "http://:pw@127.0.0.1:6379" },
        'REDIS_URL: expected a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379, got "http://…"',
      ],
    ];
    for (const [env, expected] of cases) {
      let message = "";
      try {
        parseConfig(env);
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, JSON.stringify(env)).toContain(expected);
      expect(message).not.toMatch(/Too small|Too big|Invalid input|Invalid option|received/);
      expect(message).not.toContain("short-secret");
      expect(message).not.toContain(":pw@");
    }
  });

  it("parses cluster nodes, base path and booleans", () => {
    const config = parseConfig({
      REDIS_CLUSTER_NODES: "127.0.0.1:7000, 127.0.0.1:7001",
      PINBOARD_BASE_PATH: "/pb/",
      PINBOARD_HOSTNAME_AWARE: "yes",
    });
    expect(config.redis.clusterNodes).toEqual(["127.0.0.1:7000", "127.0.0.1:7001"]);
    expect(config.basePath).toBe("/pb");
    expect(config.hostnameAware).toBe(true);
  });

  it("parses the admin surface and the listener limits, with their defaults", () => {
    const defaults = parseConfig({});
    expect(defaults.admin).toEqual({ port: undefined, hostname: undefined });
    expect(defaults.listeners).toEqual({ headersTimeoutMs: 10_000, requestTimeoutMs: 300_000, maxConnections: 10_000 });
    const set = parseConfig({
      PINBOARD_ADMIN_PORT: "9000",
      PINBOARD_ADMIN_HOSTNAME: "Admin.Example.com",
      PINBOARD_HEADERS_TIMEOUT_MS: "5000",
      PINBOARD_REQUEST_TIMEOUT_MS: "0",
      PINBOARD_MAX_CONNECTIONS: "50",
    });
    expect(set.admin).toEqual({ port: 9000, hostname: "admin.example.com" });
    expect(set.listeners).toEqual({ headersTimeoutMs: 5000, requestTimeoutMs: 0, maxConnections: 50 });
    expect(refused({ PORT: "9000", PINBOARD_ADMIN_PORT: "9000" })).toEqual([
      "PINBOARD_ADMIN_PORT: expected a port other than PORT (9000)",
    ]);
    expect(refused({ PINBOARD_HEADERS_TIMEOUT_MS: "5000", PINBOARD_REQUEST_TIMEOUT_MS: "1000" })).toEqual([
      "PINBOARD_HEADERS_TIMEOUT_MS: expected at most PINBOARD_REQUEST_TIMEOUT_MS (1000)",
    ]);
    expect(refused({ PINBOARD_ADMIN_HOSTNAME: "https://admin.example.com" })).toEqual([
      'PINBOARD_ADMIN_HOSTNAME: expected a host name such as pinboard-admin.example.com (no scheme, no port), got "https://admin.example.com"',
    ]);
    expect(refused({ PINBOARD_MAX_CONNECTIONS: "0" })).toEqual([
      'PINBOARD_MAX_CONNECTIONS: expected a whole number of at least 1, got "0"',
    ]);
    expect(refused({ PINBOARD_HEADERS_TIMEOUT_MS: "0" })).toEqual([
      'PINBOARD_HEADERS_TIMEOUT_MS: expected an integer from 1 to 3600000, got "0"',
    ]);
  });

  it("requires PINBOARD_SECRETS_KEY with a JWKS passport, and never echoes the key", () => {
    const jwks = '{"keys":[]}';
    expect(refused({ PINBOARD_PASSPORT_JWKS: jwks })).toEqual([
      "PINBOARD_SECRETS_KEY: required with PINBOARD_PASSPORT_JWKS (at least 32 characters): " +
        "worker secrets are encrypted at rest under a key derived from it",
    ]);
    const key = "k".repeat(32);
    expect(parseConfig({ PINBOARD_PASSPORT_JWKS: jwks, PINBOARD_SECRETS_KEY: key }).secretsKey).toBe(key);
    // It may also stand in for the passport secret's key, and is optional beside it.
    expect(parseConfig({ PINBOARD_PASSPORT_SECRET: "p".repeat(32), PINBOARD_SECRETS_KEY: key }).secretsKey).toBe(key);
    expect(parseConfig({ PINBOARD_PASSPORT_SECRET: "p".repeat(32) }).secretsKey).toBeUndefined();
    expect(refused({ PINBOARD_PASSPORT_JWKS: jwks, PINBOARD_SECRETS_KEY: "short-key-value" })).toEqual([
      "PINBOARD_SECRETS_KEY: expected at least 32 characters",
    ]);
  });

  it("refuses a PINBOARD_* name it does not know, naming the closest setting", () => {
    expect(refused({ PINBOARD_LEASE_TTL: "5000" })).toEqual([
      "PINBOARD_LEASE_TTL: not a Pinboard setting; did you mean PINBOARD_LEASE_TTL_MS?",
    ]);
    expect(refused({ PINBOARD_SHRADS: "4", PINBOARD_HOSTNAME_AWARE: "1" })).toEqual([
      "PINBOARD_SHRADS: not a Pinboard setting; did you mean PINBOARD_SHARDS?",
    ]);
    expect(refused({ PINBOARD_WHATEVER_ELSE: "x" })).toEqual([
      "PINBOARD_WHATEVER_ELSE: not a Pinboard setting (the README's Configuration section lists them)",
    ]);
    // Every unknown name is listed, before any value is judged.
    expect(refused({ PINBOARD_SHARDS: "zero", PINBOARD_METRIC: "0", PINBOARD_FORWARD_TIMEOUT: "1" })).toEqual([
      "PINBOARD_FORWARD_TIMEOUT: not a Pinboard setting; did you mean PINBOARD_FORWARD_TIMEOUT_MS?",
      "PINBOARD_METRIC: not a Pinboard setting; did you mean PINBOARD_METRICS?",
    ]);
  });

  it("accepts the clients' PINBOARD_* variables a shell may hold, and names outside PINBOARD_*", () => {
    const config = parseConfig({
      PINBOARD_URL: "http://127.0.0.1:8787",
      PINBOARD_OPERATOR_TOKEN: "x.y.z",
      PINBOARD_WORKER_TOKEN: "x.y.z",
      PINBOARD_SHARDS: "4",
      SHELL: "/bin/sh",
      REDIS_HOST: "elsewhere",
    });
    expect(config.shards).toBe(4);
  });
});
