import { createHmac, createSecretKey, timingSafeEqual } from "node:crypto";
import type { SyncHs256Check } from "../contract/attestation.ts";

/**
 * The worker's attestation check on Node: HMAC-SHA-256 under its one secret with node:crypto on
 * the calling thread, compared with timingSafeEqual. Web Crypto's verify, the portable default,
 * queues a job on libuv's thread pool and resolves a promise for every forwarded request.
 */
export function nodeHs256Check(secret: string): SyncHs256Check {
  const key = createSecretKey(Buffer.from(secret, "utf8"));
  return (signingInput, signature) => {
    const expected = createHmac("sha256", key).update(signingInput, "utf8").digest();
    // The length is public (an HS256 MAC is 32 bytes); timingSafeEqual throws on unequal lengths.
    return signature.byteLength === expected.byteLength && timingSafeEqual(signature, expected);
  };
}
