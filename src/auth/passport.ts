import {
  createLocalJWKSet,
  createRemoteJWKSet,
  customFetch,
  errors,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
  type JWTVerifyOptions,
  jwtVerify,
} from "jose";
import type { Config } from "../config/config.ts";
import { forbidden, unauthorized } from "../errors/pinboard-error.ts";
import type { Logger } from "../log/logger.ts";
import { type PinboardClaim, parsePinboardClaim } from "./claims.ts";

/**
 * Passport: the credential of the registry routes. `Authorization: Bearer <JWT>`, verified
 * with HS256 and the shared secret, or with the public keys of a JWKS (a URL or inline JSON).
 * A missing or unverifiable credential is 401 {"error":"unauthorized"}; a verified one without
 * the route's scope or with a malformed `pinboard` claim is 403 {"error":"forbidden"}.
 */

export type PassportScope = "pinboard:worker" | "pinboard:operator";

export interface Principal {
  sub: string;
  /** The owning account; `sub` when the credential names none. */
  account: string;
  scopes: string[];
  pinboard: PinboardClaim;
  /** The full verified payload. */
  claims: Record<string, unknown>;
}

export interface Passport {
  authenticate(authorization: string | undefined, scope: PassportScope): Promise<Principal>;
  /** The verified payload of a Bearer header, or null when it is missing or does not verify. */
  verifyBearer(authorization: string | undefined): Promise<JWTPayload | null>;
}

export interface PassportDeps {
  /** Used to fetch a remote JWKS; the global fetch otherwise. */
  fetch?: typeof fetch;
  /** Milliseconds since the epoch, for exp/nbf; the system clock otherwise. */
  now?: () => number;
  /**
   * Why a credential was refused goes here at debug level (the answer stays a bare 401/403):
   * the reason and the verified subject when there is one, never the token.
   */
  log?: Pick<Logger, "debug">;
}

/**
 * Accepted skew on exp and nbf, in seconds. Issuers' clocks are not ours; 30 s matches the skew
 * granted to attestations, and stays small next to credential lifetimes of minutes or hours.
 */
export const PASSPORT_CLOCK_TOLERANCE_S = 30;

/** Public-key algorithms accepted from a JWKS. Symmetric ones never are (no alg confusion). */
const JWKS_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];

const BEARER = /^Bearer[ \t]+([^\s]+)[ \t]*$/i;

/** The passport settings of the configuration; any of them may be absent. */
export type PassportOptions = Partial<Config["passport"]>;

export function createPassport(options: PassportOptions, deps: PassportDeps = {}): Passport {
  const key = keySource(options, deps);
  const verifyOptions: JWTVerifyOptions = {
    algorithms: key.algorithms,
    clockTolerance: PASSPORT_CLOCK_TOLERANCE_S,
    ...(options.issuer !== undefined && { issuer: options.issuer }),
    ...(options.audience !== undefined && { audience: options.audience }),
  };

  const refused = (status: 401 | 403, reason: string, fields: Record<string, unknown> = {}) =>
    deps.log?.debug(status === 401 ? "passport: unauthorized" : "passport: forbidden", { reason, ...fields });

  const verifyBearer = async (authorization: string | undefined): Promise<JWTPayload | null> => {
    if (authorization === undefined || authorization.trim() === "") {
      refused(401, "missing: no Authorization header");
      return null;
    }
    const token = BEARER.exec(authorization)?.[1];
    if (token === undefined) {
      refused(401, 'malformed: Authorization is not "Bearer <JWT>"');
      return null;
    }
    try {
      const currentDate = deps.now ? new Date(deps.now()) : undefined;
      return (await jwtVerify(token, key.get, { ...verifyOptions, currentDate })).payload;
    } catch (err) {
      if (err instanceof KeySourceUnavailable) throw err;
      refused(401, refusalReason(err, verifyOptions));
      return null;
    }
  };

  return {
    verifyBearer,
    async authenticate(authorization, scope) {
      const payload = await verifyBearer(authorization);
      if (payload === null) throw unauthorized();
      return principalOf(payload, scope, refused);
    },
  };
}

/** Why jose refused a credential, in words an operator can act on (no token, no key). */
function refusalReason(err: unknown, options: JWTVerifyOptions): string {
  if (err instanceof errors.JWTExpired)
    return `expired: exp ${String(err.payload.exp)} is past (clock tolerance ${PASSPORT_CLOCK_TOLERANCE_S} s)`;
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return "bad signature: not signed with the configured key (PINBOARD_PASSPORT_SECRET / JWKS)";
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.claim === "iss") {
      const got = JSON.stringify(err.payload.iss ?? null);
      return `wrong issuer: expected iss ${JSON.stringify(options.issuer)}, got ${got}`;
    }
    if (err.claim === "aud") {
      const got = JSON.stringify(err.payload.aud ?? null);
      return `wrong audience: expected aud ${JSON.stringify(options.audience)}, got ${got}`;
    }
    if (err.claim === "nbf") return `not yet valid: nbf ${String(err.payload.nbf)} is in the future`;
    return `invalid claim ${err.claim}: ${err.reason}`;
  }
  if (err instanceof errors.JOSEAlgNotAllowed)
    return `algorithm not allowed (accepted: ${(options.algorithms ?? []).join(", ")})`;
  if (err instanceof errors.JWKSNoMatchingKey) return "no matching key: the JWKS has no key for the token's kid/alg";
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid || err instanceof errors.JOSENotSupported) {
    return `malformed: ${err.message}`;
  }
  return `unverifiable: ${err instanceof Error ? err.message : String(err)}`;
}

function principalOf(
  payload: JWTPayload,
  scope: PassportScope,
  refused: (status: 401 | 403, reason: string, fields?: Record<string, unknown>) => void,
): Principal {
  const { sub, account } = payload;
  if (typeof sub !== "string" || sub === "") {
    refused(401, "malformed: no sub claim");
    throw unauthorized();
  }
  if (account !== undefined && (typeof account !== "string" || account === "")) {
    refused(401, "malformed: account claim is not a non-empty string", { sub });
    throw unauthorized();
  }

  const scopes = scopesOf(payload);
  if (!scopes.includes(scope)) {
    refused(403, `missing scope ${scope}`, { sub, scopes });
    throw forbidden();
  }
  const pinboard = parsePinboardClaim(payload.pinboard);
  if (pinboard === null) {
    refused(403, "malformed pinboard claim", { sub });
    throw forbidden();
  }

  return { sub, account: account ?? sub, scopes, pinboard, claims: { ...payload } };
}

/** `scopes` (an array of strings) and `scope` (space-separated), merged without duplicates. */
export function scopesOf(payload: JWTPayload): string[] {
  const found = new Set<string>();
  if (Array.isArray(payload.scopes)) {
    for (const s of payload.scopes) if (typeof s === "string" && s !== "") found.add(s);
  }
  if (typeof payload.scope === "string") {
    for (const s of payload.scope.split(/\s+/)) if (s !== "") found.add(s);
  }
  return [...found];
}

/**
 * The remote JWKS could not be fetched or parsed. Not the caller's fault, so not a 401: it
 * propagates as an ordinary error, which the error handler logs and answers with a 500.
 */
export class KeySourceUnavailable extends Error {
  constructor(cause: unknown) {
    super(`passport JWKS unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = "KeySourceUnavailable";
  }
}

interface KeySource {
  algorithms: string[];
  get: JWTVerifyGetKey;
}

function keySource(options: PassportOptions, deps: PassportDeps): KeySource {
  const { secret, jwks } = options;
  if (secret !== undefined && jwks !== undefined) {
    throw new Error("createPassport: configure either a secret or a JWKS, not both");
  }
  if (secret !== undefined && secret !== "") return secretKey(secret);
  if (jwks !== undefined && jwks.trim() !== "") {
    return /^https?:\/\//i.test(jwks.trim()) ? remoteKeys(jwks.trim(), deps) : inlineKeys(jwks);
  }
  throw new Error(
    "createPassport: no passport key configured (set PINBOARD_PASSPORT_SECRET or PINBOARD_PASSPORT_JWKS)",
  );
}

function secretKey(secret: string): KeySource {
  // Imported once, on first use, and shared by every verification of this passport.
  let imported: Promise<CryptoKey> | undefined;
  const load = () =>
    crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [
      "verify",
    ]);
  return {
    algorithms: ["HS256"],
    get: () => {
      imported ??= load().catch((err: unknown) => {
        imported = undefined;
        throw err;
      });
      return imported;
    },
  };
}

function inlineKeys(json: string): KeySource {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch {
    throw new Error("createPassport: PINBOARD_PASSPORT_JWKS is neither an http(s) URL nor JSON");
  }
  try {
    // createLocalJWKSet validates the set and caches each imported key per algorithm.
    return { algorithms: JWKS_ALGORITHMS, get: createLocalJWKSet(parsed as JSONWebKeySet) };
  } catch (err) {
    throw new Error(`createPassport: PINBOARD_PASSPORT_JWKS is not a JSON Web Key Set (${String(err)})`);
  }
}

function remoteKeys(url: string, deps: PassportDeps): KeySource {
  const fetchImpl = deps.fetch;
  // jose's remote set caches keys (10 min), refetches on an unknown kid (30 s cooldown) and
  // runs on workerd; a custom fetch is called as a plain function, never as a method.
  const remote = createRemoteJWKSet(new URL(url), {
    ...(fetchImpl && { [customFetch]: (input: string, init: RequestInit) => fetchImpl(input, init) }),
  });
  return {
    algorithms: JWKS_ALGORITHMS,
    get: async (header, token) => {
      try {
        return await remote(header, token);
      } catch (err) {
        throw isCredentialFault(err) ? err : new KeySourceUnavailable(err);
      }
    },
  };
}

/** Errors that say the token names no usable key, as opposed to the key set being unreachable. */
function isCredentialFault(err: unknown): boolean {
  return (
    err instanceof errors.JWKSNoMatchingKey ||
    err instanceof errors.JWKSMultipleMatchingKeys ||
    err instanceof errors.JOSENotSupported ||
    err instanceof errors.JOSEAlgNotAllowed ||
    err instanceof errors.JWKInvalid
  );
}
