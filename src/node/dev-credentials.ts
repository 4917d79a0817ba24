import { randomBytes } from "node:crypto";
import { mintCredential } from "../auth/mint.ts";

export interface DevPassport {
  secret: string;
  worker: string;
  operator: string;
}

/**
 * With no passport key configured, local runs mint a random HS256 key and one credential per
 * role (all namespaces, all backend hosts, 24 h), so `npm start` works with curl at once.
 */
export async function mintDevPassport(): Promise<DevPassport> {
  const secret = randomBytes(32).toString("base64url");
  const pinboard = { namespaces: ["*"], allowedBackendHosts: ["*"] };
  const ttlSeconds = 24 * 3600;
  return {
    secret,
    worker: await mintCredential({ secret, sub: "dev-worker", scopes: ["pinboard:worker"], pinboard, ttlSeconds }),
    operator: await mintCredential({ secret, sub: "dev-operator", scopes: ["pinboard:operator"], pinboard, ttlSeconds }),
  };
}

/**
 * What a local start prints: the development credentials, and the command that starts the example
 * worker against this Pinboard (with the Redis its durable state must share, so that the sweeper
 * sees the worker's durability index).
 */
export function describeDevPassport(dev: DevPassport, baseUrl: string, durableRedisUrl?: string): string {
  return [
    "No PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS: minted a random development key.",
    `  PINBOARD_PASSPORT_SECRET=${dev.secret}`,
    "Worker credential (pinboard:worker, all namespaces and hosts, 24 h):",
    `  export PINBOARD_WORKER_TOKEN=${dev.worker}`,
    "Operator credential (pinboard:operator, all namespaces and hosts, 24 h):",
    `  export PINBOARD_OPERATOR_TOKEN=${dev.operator}`,
    ...(durableRedisUrl
      ? [
          "Start a worker (in another terminal, after the exports above):",
          `  PINBOARD_URL=${baseUrl} DURABLE_REDIS_URL=${durableRedisUrl} CLIENT_ID=worker-a npx tsx examples/worker.ts`,
        ]
      : []),
    "Try:",
    `  curl -s ${baseUrl}/healthz`,
    `  curl -s -X POST ${baseUrl}/counter/demo/increment`,
    `  curl -s -H "Authorization: Bearer $PINBOARD_OPERATOR_TOKEN" ${baseUrl}/registry/health`,
  ].join("\n");
}
