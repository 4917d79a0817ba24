import { base64url, base64urlDecode } from "./base64url.ts";

/**
 * Pinboard-Attestation: a compact JWS, header {"alg":"HS256","typ":"pinboard+jwt"}, signed with
 * the worker's registered secret, on every forward, _wake and _pinned/stats call. Built by hand
 * with Web Crypto HMAC because it runs per forwarded request (jose's SignJWT re-serialises the
 * header and re-validates options on every call). Verification is for the worker library.
 */

export const ATTESTATION_TYP = "pinboard+jwt";
/** exp = iat + this. */
export const ATTESTATION_TTL_S = 30;
/** Clock skew the verifier grants on exp and iat. */
export const ATTESTATION_SKEW_S = 30;

export interface AttestationClaims {
  /** The worker's sessionId (or its local audience for in-process cluster calls). */
  aud: string;
  iat: number;
  exp: number;
  /** `{ns}/{id}` of an attested calling instance. */
  caller?: string;
  depth?: number;
  /** The data-plane credential: `{ sub, scopes?, claims }` without pinboard scopes or claim. */
  acct?: object;
}

export interface AttestationInput {
  aud: string;
  caller?: string;
  depth?: number;
  acct?: object;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

const HEADER = base64url(encoder.encode(JSON.stringify({ alg: "HS256", typ: ATTESTATION_TYP })));

/** Bounded LRU of imported HMAC keys, one per worker secret. */
const MAX_KEYS = 1024;
const keys = new Map<string, Promise<CryptoKey>>();

function hmacKey(secret: string): Promise<CryptoKey> {
  const cached = keys.get(secret);
  if (cached !== undefined) {
    keys.delete(secret);
    keys.set(secret, cached);
    return cached;
  }
  const imported = crypto.subtle.importKey(
    "raw",
    encoder.encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign", "verify"],
  );
  imported.catch(() => keys.delete(secret));
  keys.set(secret, imported);
  if (keys.size > MAX_KEYS) keys.delete(keys.keys().next().value as string);
  return imported;
}

/**
 * Plain attestations (aud, iat, exp only) are the same token for every forward to one worker in
 * one second, so they are signed once per (worker, second): the HMAC is an async Web Crypto call
 * that costs a thread-pool round trip per request otherwise.
 */
const MAX_PLAIN = 4096;
let plainSecond = -1;
const plain = new Map<string, { secret: string; token: Promise<string> }>();

function cachedPlain(secret: string, aud: string, iat: number): Promise<string> {
  if (iat !== plainSecond || plain.size >= MAX_PLAIN) {
    plain.clear();
    plainSecond = iat;
  }
  const hit = plain.get(aud);
  if (hit !== undefined && hit.secret === secret) return hit.token;
  const token = sign(secret, { aud, iat, exp: iat + ATTESTATION_TTL_S });
  token.catch(() => plain.delete(aud));
  plain.set(aud, { secret, token });
  return token;
}

export function signAttestation(secret: string, claims: AttestationInput, nowSeconds: number): Promise<string> {
  const iat = Math.floor(nowSeconds);
  if (claims.caller === undefined && claims.depth === undefined && claims.acct === undefined) {
    return cachedPlain(secret, claims.aud, iat);
  }
  const payload: AttestationClaims = { aud: claims.aud, iat, exp: iat + ATTESTATION_TTL_S };
  if (claims.caller !== undefined) payload.caller = claims.caller;
  if (claims.depth !== undefined) payload.depth = claims.depth;
  if (claims.acct !== undefined) payload.acct = claims.acct;
  return sign(secret, payload);
}

async function sign(secret: string, payload: AttestationClaims): Promise<string> {
  const signingInput = `${HEADER}.${base64url(encoder.encode(JSON.stringify(payload)))}`;
  const key = await hmacKey(secret);
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(signingInput));
  return `${signingInput}.${base64url(new Uint8Array(signature))}`;
}

/**
 * The claims of a valid attestation for `audience`, or null. HS256 and typ pinboard+jwt only;
 * accepted while now < exp + 30 s and iat ≤ now + 30 s. The signature check is
 * crypto.subtle.verify, which compares in constant time.
 */
export async function verifyAttestation(
  token: string,
  secret: string,
  audience: string,
  nowSeconds: number = Date.now() / 1000,
): Promise<AttestationClaims | null> {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];

  const header = decodeJson(headerPart);
  if (header === null || header.alg !== "HS256" || header.typ !== ATTESTATION_TYP) return null;
  if ("crit" in header || "b64" in header) return null;

  const signature = base64urlDecode(signaturePart);
  if (signature === null) return null;
  const key = await hmacKey(secret);
  const valid = await crypto.subtle.verify(
    "HMAC",
    key,
    signature,
    encoder.encode(`${headerPart}.${payloadPart}`),
  );
  if (!valid) return null;

  const payload = decodeJson(payloadPart);
  if (payload === null) return null;
  const { aud, iat, exp, caller, depth, acct } = payload;
  if (aud !== audience) return null;
  if (!isNumericDate(iat) || !isNumericDate(exp)) return null;
  if (nowSeconds >= exp + ATTESTATION_SKEW_S || iat > nowSeconds + ATTESTATION_SKEW_S) return null;
  if (caller !== undefined && typeof caller !== "string") return null;
  if (depth !== undefined && !(Number.isSafeInteger(depth) && (depth as number) >= 0)) return null;
  if (acct !== undefined && (typeof acct !== "object" || acct === null || Array.isArray(acct))) return null;

  const claims: AttestationClaims = { aud, iat, exp };
  if (caller !== undefined) claims.caller = caller;
  if (depth !== undefined) claims.depth = depth as number;
  if (acct !== undefined) claims.acct = acct as object;
  return claims;
}

function isNumericDate(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value);
}

function decodeJson(part: string): Record<string, unknown> | null {
  const bytes = base64urlDecode(part);
  if (bytes === null) return null;
  try {
    const value: unknown = JSON.parse(decoder.decode(bytes));
    return typeof value === "object" && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
