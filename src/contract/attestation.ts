import { attestationId } from "./attestation-id.ts";
import { base64url, base64urlDecode } from "./base64url.ts";
import { BoundedLru } from "./bounded-lru.ts";

/**
 * Pinboard-Attestation: a compact JWS, header {"alg":"HS256","typ":"pinboard+jwt"}, signed with
 * the worker's registered secret, on every forward, _wake, _alarm and _pinned/stats call. Built by
 * hand with Web Crypto HMAC because it runs per forwarded request (jose's SignJWT re-serialises
 * the header and re-validates options on every call). Verification is for the worker library.
 *
 * An attestation names the call it authorises (after DPoP's htm and htu, RFC 9449 §4.2): `htm`
 * its method, `htu` its request target relative to the worker's advertise URL, query included
 * ("/counter/c1/x?y=1", "/_pinned/stats"), and `epoch` its Pinboard-Epoch (absent on calls that
 * carry none). A verifier refuses a token whose binding disagrees with the request it came on.
 *
 * Every token also carries `jti`, an id of its own (attestation-id.ts): the worker library
 * accepts each id once (src/pinned/seen-attestations.ts), so a token lifted from one call
 * authorises that call alone, not a second one with another body.
 */

export const ATTESTATION_TYP = "pinboard+jwt";
/** exp = iat + this: the contract's value, which every verifier may rely on. */
export const ATTESTATION_TTL_S = 30;
/** Clock skew the verifier grants on exp and iat: the contract's value, a verifier's default. */
export const ATTESTATION_SKEW_S = 30;

/**
 * How long a verifier accepts a token: while now < min(exp, iat + maxAgeS) + skewS and
 * iat <= now + skewS. The contract's values by default; a worker may tighten both.
 */
export interface AttestationAcceptance {
  maxAgeS: number;
  skewS: number;
}

export const CONTRACT_ACCEPTANCE: AttestationAcceptance = { maxAgeS: ATTESTATION_TTL_S, skewS: ATTESTATION_SKEW_S };

/** The instant (seconds) from which a token with these times is no longer accepted. */
export function acceptedUntil(
  claims: Pick<AttestationClaims, "iat" | "exp">,
  acceptance: AttestationAcceptance,
): number {
  return Math.min(claims.exp, claims.iat + acceptance.maxAgeS) + acceptance.skewS;
}

export interface AttestationClaims {
  /** The worker's sessionId (or its local audience for in-process cluster calls). */
  aud: string;
  iat: number;
  exp: number;
  /** The token's own id, 16 to 64 base64url characters: a worker accepts each once. */
  jti?: string;
  /** The HTTP method of the call, exactly as sent. */
  htm?: string;
  /** The call's path and query relative to the worker's advertise URL, starting with "/". */
  htu?: string;
  /** The call's Pinboard-Epoch: on forwards, _wake and _alarm. */
  epoch?: string;
  /** `{ns}/{id}` of an attested calling instance. */
  caller?: string;
  depth?: number;
  /** The data-plane credential: `{ sub, scopes?, claims }` without pinboard scopes or claim. */
  acct?: object;
}

export type AttestationInput = Omit<AttestationClaims, "iat" | "exp" | "jti">;

/**
 * The htu of a call to `url` on a worker advertised at `advertiseUrl`: the URL's path after the
 * advertise URL's path, with its query, as the worker reads both.
 */
export function attestationTarget(url: string, advertiseUrl: string): string {
  const base = new URL(advertiseUrl).pathname.replace(/\/+$/, "");
  const { pathname, search } = new URL(url);
  return `${pathname.slice(base.length)}${search}`;
}

/**
 * The request-binding claims, together: a token carries all of htm and htu (and epoch where the
 * call has one) or none.
 */
export function isBound(claims: AttestationClaims): boolean {
  return claims.htm !== undefined || claims.htu !== undefined || claims.epoch !== undefined;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

const HEADER = base64url(encoder.encode(JSON.stringify({ alg: "HS256", typ: ATTESTATION_TYP })));

/** Imported HMAC keys, one per worker secret. */
const keys = new BoundedLru<string, Promise<CryptoKey>>(1024);

function hmacKey(secret: string): Promise<CryptoKey> {
  const cached = keys.get(secret);
  if (cached !== undefined) return cached;
  const imported = crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
    "sign",
    "verify",
  ]);
  imported.catch(() => keys.delete(secret));
  keys.set(secret, imported);
  return imported;
}

/**
 * A compact HS256 JWS of `payloadJson` under `secret` with the given encoded header, computed
 * synchronously: what a runtime offers when it has one (node:crypto and Buffer on the Node
 * entry). Web Crypto's sign is a thread-pool round trip per call in Node, and base64url in plain
 * JavaScript a few microseconds more, on every token: each carries its own jti, so none is reused.
 */
export type SyncJwsHs256 = (secret: string, encodedHeader: string, payloadJson: string) => string;

export function signAttestation(
  secret: string,
  claims: AttestationInput,
  nowSeconds: number,
  jws?: SyncJwsHs256,
): Promise<string> {
  const payload = payloadOf(claims, Math.floor(nowSeconds));
  return jws !== undefined ? Promise.resolve(jws(secret, HEADER, JSON.stringify(payload))) : sign(secret, payload);
}

/** The payload with its claims in a fixed order, optional ones only when given. */
function payloadOf(claims: AttestationInput, iat: number): AttestationClaims {
  const payload: AttestationClaims = { aud: claims.aud, iat, exp: iat + ATTESTATION_TTL_S, jti: attestationId() };
  if (claims.htm !== undefined) payload.htm = claims.htm;
  if (claims.htu !== undefined) payload.htu = claims.htu;
  if (claims.epoch !== undefined) payload.epoch = claims.epoch;
  if (claims.caller !== undefined) payload.caller = claims.caller;
  if (claims.depth !== undefined) payload.depth = claims.depth;
  if (claims.acct !== undefined) payload.acct = claims.acct;
  return payload;
}

async function sign(secret: string, payload: AttestationClaims): Promise<string> {
  const signingInput = `${HEADER}.${base64url(encoder.encode(JSON.stringify(payload)))}`;
  const key = await hmacKey(secret);
  const signature = await crypto.subtle.sign("HMAC", key, encoder.encode(signingInput));
  return `${signingInput}.${base64url(new Uint8Array(signature))}`;
}

/**
 * Whether `signature` is the HS256 MAC of `signingInput` under the one secret the check was made
 * for, compared in constant time, computed synchronously: what a runtime offers when it has one
 * (node:crypto in the worker library on Node), where Web Crypto's verify is a thread-pool round
 * trip per call.
 */
export type SyncHs256Check = (signingInput: string, signature: Uint8Array) => boolean;

/** The audience an attestation must name: one, one of several, or whichever the predicate accepts. */
export type AudienceCheck = string | readonly string[] | ((aud: string) => boolean);

function acceptsAudience(audience: AudienceCheck, aud: string): boolean {
  if (typeof audience === "string") return aud === audience;
  return typeof audience === "function" ? audience(aud) : audience.includes(aud);
}

/**
 * The claims of a valid attestation for `audience` (or one of several), or null. HS256 and typ
 * pinboard+jwt only; accepted within `acceptance` (by default while now < exp + 30 s and
 * iat ≤ now + 30 s); optional claims of the wrong type make it invalid. The signature check is `check` when given (made for `secret`), else
 * crypto.subtle.verify; both compare in constant time. Whether htm, htu and epoch match the
 * request is the caller's to check.
 */
export async function verifyAttestation(
  token: string,
  secret: string,
  audience: AudienceCheck,
  nowSeconds: number = Date.now() / 1000,
  check?: SyncHs256Check,
  acceptance: AttestationAcceptance = CONTRACT_ACCEPTANCE,
): Promise<AttestationClaims | null> {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  const [headerPart, payloadPart, signaturePart] = parts as [string, string, string];

  const header = decodeJson(headerPart);
  if (header === null || header.alg !== "HS256" || header.typ !== ATTESTATION_TYP) return null;
  if ("crit" in header || "b64" in header) return null;

  const signature = base64urlDecode(signaturePart);
  if (signature === null) return null;
  const signingInput = `${headerPart}.${payloadPart}`;
  const valid =
    check !== undefined
      ? check(signingInput, signature)
      : await crypto.subtle.verify("HMAC", await hmacKey(secret), signature, encoder.encode(signingInput));
  if (!valid) return null;

  const payload = decodeJson(payloadPart);
  if (payload === null) return null;
  const { aud, iat, exp } = payload;
  if (typeof aud !== "string" || !acceptsAudience(audience, aud)) return null;
  if (!isNumericDate(iat) || !isNumericDate(exp)) return null;
  if (nowSeconds >= acceptedUntil({ iat, exp }, acceptance) || iat > nowSeconds + acceptance.skewS) return null;
  return optionalClaims(payload, { aud, iat, exp });
}

/** `claims` with the payload's optional claims added; null when one has the wrong type. */
function optionalClaims(payload: Record<string, unknown>, claims: AttestationClaims): AttestationClaims | null {
  const { jti, htm, htu, epoch, caller, depth, acct } = payload;
  if (jti !== undefined && !(typeof jti === "string" && /^[A-Za-z0-9_-]{16,64}$/.test(jti))) return null;
  if (htm !== undefined && !(typeof htm === "string" && htm !== "")) return null;
  if (htu !== undefined && !(typeof htu === "string" && htu.startsWith("/"))) return null;
  if (epoch !== undefined && !(typeof epoch === "string" && /^\d+$/.test(epoch))) return null;
  if (caller !== undefined && typeof caller !== "string") return null;
  if (depth !== undefined && !(Number.isSafeInteger(depth) && (depth as number) >= 0)) return null;
  if (acct !== undefined && (typeof acct !== "object" || acct === null || Array.isArray(acct))) return null;

  if (jti !== undefined) claims.jti = jti;
  if (htm !== undefined) claims.htm = htm;
  if (htu !== undefined) claims.htu = htu;
  if (epoch !== undefined) claims.epoch = epoch;
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
