import { decodeJwt } from "jose";
import { parsePinboardClaim } from "../auth/claims.ts";
import { scopesOf } from "../auth/passport.ts";

/**
 * What the CLI can tell about its own credential without the server's key, to name the likely
 * cause of a 401 or 403: only the server can verify the signature, but shape, expiry, scopes and
 * the pinboard claim are readable by anyone holding the token.
 */
export type CredentialReading =
  | { kind: "not-a-jwt" }
  | { kind: "expired"; expiredAt: number }
  | { kind: "readable"; scopes: string[]; pinboardClaimValid: boolean };

/** Header, payload and signature in base64url: decodeJwt alone would read "Bearer eyJ…" too. */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Reads (never verifies) a JWT's payload; `now` in ms. */
export function readCredential(token: string, now: number): CredentialReading {
  if (!COMPACT_JWS.test(token)) return { kind: "not-a-jwt" };
  let payload: ReturnType<typeof decodeJwt>;
  try {
    payload = decodeJwt(token);
  } catch {
    return { kind: "not-a-jwt" };
  }
  if (typeof payload.exp === "number" && payload.exp * 1000 <= now) {
    return { kind: "expired", expiredAt: payload.exp * 1000 };
  }
  return {
    kind: "readable",
    scopes: scopesOf(payload),
    pinboardClaimValid: parsePinboardClaim(payload.pinboard) !== null,
  };
}
