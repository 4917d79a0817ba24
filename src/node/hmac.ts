import { createHmac } from "node:crypto";
import type { SyncHmacSha256 } from "../contract/attestation.ts";

/**
 * The Node entry's synchronous HMAC-SHA256 for attestations (RuntimeInfo.hmacSha256): node:crypto
 * on the calling thread, where Web Crypto's sign queues a job on the thread pool per call.
 */
export const nodeHmacSha256: SyncHmacSha256 = (secret, data) => createHmac("sha256", secret).update(data).digest("base64url");
