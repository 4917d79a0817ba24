import type { Hono } from "hono";
import { createPinboard } from "../../src/app/app.ts";
import { buildDeps } from "../../src/app/bootstrap.ts";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { mintCredential } from "../../src/auth/mint.ts";
import { parseConfig } from "../../src/config/config.ts";
import type { AppDeps, AppEnv } from "../../src/deps/app-deps.ts";
import { createLogger } from "../../src/log/logger.ts";
import type { RedisPort } from "../../src/redis/port.ts";
import { cloudflarePeer } from "../../src/runtime/cloudflare/isolate.ts";
import { TcpRedis } from "../../src/runtime/node/redis/tcp.ts";
import { type RedisTarget, redisTargetEnv } from "./redis.ts";

export const TEST_PASSPORT_SECRET = "test-passport-secret-0123456789abcdef";

export interface TestPinboard {
  app: Hono<AppEnv>;
  deps: AppDeps;
  /** Sends a request through the app (in-process, real Redis, real outbound fetch). */
  call(
    method: string,
    path: string,
    options?: { body?: unknown; raw?: string; token?: string; headers?: Record<string, string> },
  ): Promise<Response>;
  close(): Promise<void>;
}

/**
 * A Pinboard app built exactly as the Node entry builds it, on a test's private Redis: a
 * TestRedis (a cluster when it is one), a URL, or `{ clusterNodes: "host:port,host:port" }`.
 * `wrapRedis` puts a port of the test's in front of the real one (to fail one call on purpose).
 */
export async function startTestPinboard(
  target: RedisTarget,
  env: Record<string, string> = {},
  options: { wrapRedis?: (port: RedisPort) => RedisPort } = {},
): Promise<TestPinboard> {
  const config = parseConfig({
    ...redisTargetEnv(target),
    PINBOARD_PASSPORT_SECRET: TEST_PASSPORT_SECRET,
    PINBOARD_LOG_LEVEL: "silent",
    ...env,
  });
  const redis = new TcpRedis(
    config.redis.clusterNodes ? { clusterNodes: config.redis.clusterNodes } : { url: config.redis.url! },
  );
  const durableRedis = config.durable.redisUrl ? new TcpRedis({ url: config.durable.redisUrl }) : undefined;
  const deps = buildDeps({
    config,
    redis: options.wrapRedis ? options.wrapRedis(redis) : redis,
    ...(durableRedis ? { durableRedis } : {}),
    // Node's capabilities without RSS or the synchronous signer: attestations are signed by jose,
    // as on the Workers entry.
    runtime: { label: "node", backgroundWork: "runs-on", fetchDecodesBodies: true, startedAt: Date.now() },
    log: createLogger(config.logLevel),
  });
  await deps.fleet.refresh();
  // The peer as Workers reads it (CF-Connecting-IP): these tests name a client's address with it.
  const app = createPinboard(deps, { peerAddress: cloudflarePeer }).app;
  return {
    app,
    deps,
    async call(method, path, options = {}) {
      const headers: Record<string, string> = { ...options.headers };
      if (options.token) headers.authorization = `Bearer ${options.token}`;
      let body: string | undefined = options.raw;
      if (options.body !== undefined) {
        body = JSON.stringify(options.body);
        headers["content-type"] = "application/json";
      }
      return app.request(path, { method, headers, body });
    },
    async close() {
      await redis.close();
      await durableRedis?.close();
    },
  };
}

export const ALL: PinboardClaim = { namespaces: ["*"], allowedBackendHosts: ["*"] };

export function credential(
  scope: "pinboard:worker" | "pinboard:operator",
  claim: Partial<PinboardClaim> = {},
  extra: { sub?: string; account?: string; secret?: string } = {},
): Promise<string> {
  return mintCredential({
    secret: extra.secret ?? TEST_PASSPORT_SECRET,
    sub: extra.sub ?? "tester",
    account: extra.account,
    scopes: [scope],
    pinboard: { ...ALL, ...claim },
  });
}
