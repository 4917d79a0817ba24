import { createHmac } from "node:crypto";
import { ATTESTATION_TTL_S } from "../src/contract/attestation.ts";

/**
 * An HS256 attestation for `aud` naming a GET of `htu` at `epoch`, without a jti: wrk cannot sign
 * per request, so one token per path serves a whole window (as from a Pinboard before single-use
 * tokens, which the worker accepts more than once unless requireBoundAttestation). Valid for the
 * contract's 30 s from now: sign it when the window starts.
 */
export function reusableAttestation(secret: string, aud: string, htu: string, epoch: string): string {
  const iat = Math.floor(Date.now() / 1000);
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const claims = { aud, iat, exp: iat + ATTESTATION_TTL_S, htm: "GET", htu, epoch };
  const input = `${part({ alg: "HS256", typ: "pinboard+jwt" })}.${part(claims)}`;
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
}
