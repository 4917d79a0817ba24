import { SignJWT } from "jose";
import { type PinboardClaim, pinboardClaimSchema } from "./claims.ts";

/**
 * Mints an HS256 Passport credential. Shared by scripts/mint-credential.ts, the Node entry's
 * dev-key printout and the tests, so all of them produce the shape `createPassport` accepts.
 */

export interface MintOptions {
  secret: string;
  sub: string;
  /** Omitted from the token when absent (Passport then uses sub). */
  account?: string;
  scopes: string[];
  pinboard: PinboardClaim;
  /** Lifetime in seconds; 0 mints a credential without exp. Default 3600. */
  ttlSeconds?: number;
  issuer?: string;
  audience?: string;
  /** iat in seconds since the epoch; the system clock otherwise. */
  nowSeconds?: number;
}

export const DEFAULT_CREDENTIAL_TTL_S = 3600;

export async function mintCredential(options: MintOptions): Promise<string> {
  const pinboard = pinboardClaimSchema.safeParse(options.pinboard);
  if (!pinboard.success) throw new Error(`mintCredential: invalid pinboard claim: ${pinboard.error.message}`);
  if (options.sub === "") throw new Error("mintCredential: sub must not be empty");
  const ttl = options.ttlSeconds ?? DEFAULT_CREDENTIAL_TTL_S;
  if (!Number.isSafeInteger(ttl) || ttl < 0) throw new Error("mintCredential: ttlSeconds must be an integer ≥ 0");

  const iat = Math.floor(options.nowSeconds ?? Date.now() / 1000);
  const jwt = new SignJWT({
    ...(options.account !== undefined && { account: options.account }),
    scopes: options.scopes,
    pinboard: pinboard.data,
  })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject(options.sub)
    .setIssuedAt(iat);
  if (ttl > 0) jwt.setExpirationTime(iat + ttl);
  if (options.issuer !== undefined) jwt.setIssuer(options.issuer);
  if (options.audience !== undefined) jwt.setAudience(options.audience);
  return jwt.sign(new TextEncoder().encode(options.secret));
}
