/**
 * SHA-256 (FIPS 180-4) in plain TypeScript, synchronous. Bucket numbers hash every id a request
 * names; Web Crypto's digest is asynchronous and costs a thread-pool round trip per call in Node
 * (tens of microseconds), which dominated a register naming tens of thousands of instances. This
 * runs in about a microsecond for an id, on Node and on workerd alike. Checked against Web
 * Crypto in test/registry/register-limits.test.ts.
 */

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
]);
const W = new Int32Array(64);

const ror = (x: number, n: number): number => (x >>> n) | (x << (32 - n));

const H = new Int32Array(8);
const encoder = new TextEncoder();
/** Scratch space for short texts (ids are at most 256 characters): no allocation per hash. */
const SCRATCH = new Uint8Array(4096);

/** The SHA-256 digest of `bytes`, 32 bytes. */
export function sha256(bytes: Uint8Array): Uint8Array {
  const padded = new Uint8Array(paddedLength(bytes.length));
  padded.set(bytes);
  digestInto(padded, bytes.length);
  const out = new Uint8Array(32);
  const view = new DataView(out.buffer);
  for (let i = 0; i < 8; i++) view.setInt32(i * 4, H[i]!);
  return out;
}

/** The first four bytes of sha256(UTF-8 of `text`) as an unsigned 32-bit number. */
export function sha256Head(text: string): number {
  // UTF-8 takes at most 3 bytes per UTF-16 code unit.
  if (text.length * 3 + 72 > SCRATCH.length) return new DataView(sha256(encoder.encode(text)).buffer).getUint32(0);
  const { written } = encoder.encodeInto(text, SCRATCH);
  const padded = SCRATCH.subarray(0, paddedLength(written));
  padded.fill(0, written);
  digestInto(padded, written);
  return H[0]! >>> 0;
}

const paddedLength = (n: number): number => ((n + 9 + 63) >> 6) * 64;

/** Hashes `padded` (the message's `length` bytes, room for the padding, zeros after them) into H. */
function digestInto(padded: Uint8Array, length: number): void {
  padded[length] = 0x80;
  const view = new DataView(padded.buffer, padded.byteOffset, padded.byteLength);
  const bits = length * 8;
  view.setUint32(padded.length - 8, Math.floor(bits / 0x100000000));
  view.setUint32(padded.length - 4, bits >>> 0);

  let h0 = 0x6a09e667 | 0,
    h1 = 0xbb67ae85 | 0,
    h2 = 0x3c6ef372 | 0,
    h3 = 0xa54ff53a | 0;
  let h4 = 0x510e527f | 0,
    h5 = 0x9b05688c | 0,
    h6 = 0x1f83d9ab | 0,
    h7 = 0x5be0cd19 | 0;
  for (let off = 0; off < padded.length; off += 64) {
    for (let i = 0; i < 16; i++) W[i] = view.getInt32(off + i * 4);
    for (let i = 16; i < 64; i++) {
      const w15 = W[i - 15]!,
        w2 = W[i - 2]!;
      const s0 = ror(w15, 7) ^ ror(w15, 18) ^ (w15 >>> 3);
      const s1 = ror(w2, 17) ^ ror(w2, 19) ^ (w2 >>> 10);
      W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0;
    }
    let a = h0,
      b = h1,
      c = h2,
      d = h3,
      e = h4,
      f = h5,
      g = h6,
      h = h7;
    for (let i = 0; i < 64; i++) {
      const t1 = (h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0;
      const t2 = ((ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c))) | 0;
      h = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = b;
      b = a;
      a = (t1 + t2) | 0;
    }
    h0 = (h0 + a) | 0;
    h1 = (h1 + b) | 0;
    h2 = (h2 + c) | 0;
    h3 = (h3 + d) | 0;
    h4 = (h4 + e) | 0;
    h5 = (h5 + f) | 0;
    h6 = (h6 + g) | 0;
    h7 = (h7 + h) | 0;
  }
  H[0] = h0;
  H[1] = h1;
  H[2] = h2;
  H[3] = h3;
  H[4] = h4;
  H[5] = h5;
  H[6] = h6;
  H[7] = h7;
}
