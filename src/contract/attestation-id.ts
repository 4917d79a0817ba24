/**
 * The `jti` of an attestation: 16 random bytes (128 bits), base64url, 22 characters, fresh for
 * every signed token so a worker can accept each one once. Bytes come from
 * crypto.getRandomValues in batches of ID_BATCH ids: one call per id costs several times what
 * the encoding does (a native call and an allocation per forward).
 */

const ID_BYTES = 16;
const ID_BATCH = 256;
const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const CODES = Uint8Array.from(ALPHABET, (char) => char.charCodeAt(0));

const pool = new Uint8Array(ID_BYTES * ID_BATCH);
let used = ID_BATCH;
const chars: number[] = new Array(22).fill(0);

/** A fresh attestation id. */
export function attestationId(): string {
  if (used === ID_BATCH) {
    crypto.getRandomValues(pool);
    used = 0;
  }
  return encodeId(pool, used++ * ID_BYTES);
}

/**
 * The 16 bytes at `offset` as unpadded base64url: five 3-byte groups and one byte, made into one
 * flat string at once (appending character by character builds a rope that every use flattens).
 */
export function encodeId(bytes: Uint8Array, offset: number): string {
  let at = 0;
  for (let i = offset; i < offset + 15; i += 3) {
    const group = (bytes[i]! << 16) | (bytes[i + 1]! << 8) | bytes[i + 2]!;
    chars[at++] = CODES[group >> 18]!;
    chars[at++] = CODES[(group >> 12) & 63]!;
    chars[at++] = CODES[(group >> 6) & 63]!;
    chars[at++] = CODES[group & 63]!;
  }
  const last = bytes[offset + 15]!;
  chars[at++] = CODES[last >> 2]!;
  chars[at] = CODES[(last & 3) << 4]!;
  return String.fromCharCode(...chars);
}
