/**
 * SHA-256 for bucket numbers, synchronous: a register hashes every id it names, and Web Crypto's
 * digest is asynchronous (a thread-pool round trip per call in Node). `@noble/hashes` is audited
 * plain JavaScript and runs alike on Node and workerd. Checked against Web Crypto in
 * test/registry/register-limits.test.ts.
 */
import { sha256 } from "@noble/hashes/sha2.js";

export { sha256 };

const encoder = new TextEncoder();

/** The first four bytes of sha256(UTF-8 of `text`) as an unsigned 32-bit number. */
export function sha256Head(text: string): number {
  const digest = sha256(encoder.encode(text));
  return ((digest[0]! << 24) | (digest[1]! << 16) | (digest[2]! << 8) | digest[3]!) >>> 0;
}
