import { verifyAttestation, type AttestationClaims } from "../contract/attestation.ts";
import { constantTimeEqual } from "../contract/constant-time.ts";
import { ATTESTATION_HEADER, PROXY_SECRET_HEADER } from "./responses.ts";

export type { AttestationClaims };

/**
 * Checks what Pinboard proves on each call: an attestation signed with the worker's secret whose
 * aud is the live sessionId (or the configured local audience), and, on the probe and _alarm,
 * the secret itself in Pinboard-Proxy-Secret.
 */
export class AttestationGuard {
  constructor(
    private readonly secret: string,
    private readonly audiences: () => (string | null | undefined)[],
    private readonly nowMs: () => number = Date.now,
  ) {}

  async verify(request: Request): Promise<AttestationClaims | null> {
    const token = request.headers.get(ATTESTATION_HEADER);
    if (!token) return null;
    const now = this.nowMs() / 1000;
    for (const audience of this.audiences()) {
      if (!audience) continue;
      const claims = await verifyAttestation(token, this.secret, audience, now);
      if (claims) return claims;
    }
    return null;
  }

  async hasProxySecret(request: Request): Promise<boolean> {
    const given = request.headers.get(PROXY_SECRET_HEADER);
    if (given === null) return false;
    return constantTimeEqual(given, this.secret);
  }
}
