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

export function describeDevPassport(dev: DevPassport, baseUrl: string): string {
  return [
    "No PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS: minted a random development key.",
    `  PINBOARD_PASSPORT_SECRET=${dev.secret}`,
    "Worker credential (pinboard:worker, all namespaces and hosts, 24 h):",
    `  export PINBOARD_WORKER_TOKEN=${dev.worker}`,
    "Operator credential (pinboard:operator, all namespaces and hosts, 24 h):",
    `  export PINBOARD_OPERATOR_TOKEN=${dev.operator}`,
    "Try:",
    `  curl -s ${baseUrl}/healthz`,
    `  curl -s -H "Authorization: Bearer $PINBOARD_OPERATOR_TOKEN" ${baseUrl}/registry/health`,
  ].join("\n");
}
