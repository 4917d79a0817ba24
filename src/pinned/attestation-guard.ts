import {
  type AttestationAcceptance,
  type AttestationClaims,
  acceptedUntil,
  isBound,
  type SyncHs256Check,
  verifyAttestation,
} from "../contract/attestation.ts";
import { constantTimeEqual } from "../contract/constant-time.ts";
import { isEpoch } from "./durability.ts";
import { ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER } from "./responses.ts";
import type { SeenAttestations } from "./seen-attestations.ts";
import type { PinnedLogger } from "./types.ts";

export type { AttestationClaims };

export interface GuardOptions {
  secret: string;
  /** The audiences accepted now: the live sessionId, a retired one within its grace, the local audience. */
  audiences(): (string | null | undefined)[];
  /**
   * The register under way, settling once its answer is in (and with it the new sessionId), or
   * null when none is. Pinboard may place a forward on a new session before that answer arrives.
   */
  registering?(): Promise<void> | null;
  log?: PinnedLogger;
  /** Path prefix of the advertise URL ("" or "/something"): an attestation's htu is relative to it. */
  basePath: string;
  /**
   * Refuse attestations that name no request (no htm, htu, epoch) or carry no jti, instead of
   * accepting them.
   */
  requireBinding: boolean;
  /** How long a token is accepted: the contract's 30 s life and 30 s skew, or tighter. */
  acceptance: AttestationAcceptance;
  /** The ids accepted so far: each is accepted once. */
  seen: SeenAttestations;
  nowMs(): number;
  /** A synchronous signature check made for `secret` (the runtime's); Web Crypto's verify without one. */
  check?: SyncHs256Check;
}

/**
 * Checks what Pinboard proves on each call: an attestation signed with the worker's secret whose
 * aud is an accepted audience and which names this very request (htm, htu, epoch), and, on the
 * probe and _alarm, the secret itself in Pinboard-Proxy-Secret.
 *
 * An attestation without htm, htu and epoch names no request: Pinboard before they existed, or
 * another signer holding the secret. It is accepted unless `requireBinding`. One that carries any
 * of them must carry htm and htu, and all three must match: the same method, the same target, the
 * same Pinboard-Epoch (both absent on _pinned/stats and the challenge). A call that carries an
 * epoch in Pinboard-Epoch is refused with any attestation that does not name it, unbound or not.
 *
 * Each attestation is accepted once: its jti is remembered until the token expires (`seen`), and
 * a second call with it is refused. One without a jti (a Pinboard before them) is accepted, each
 * time, unless `requireBinding`, and the first one is logged.
 *
 * Pinboard stores a new session before its register answer reaches the worker, and may forward
 * on it at once. An attestation that is genuine (signed with the worker's secret, in time) but
 * names an audience the worker does not know yet therefore waits for the register under way, if
 * one is, and is judged against the sessionId its answer brings. The wait is bounded by the
 * register call's own timeout; without a register under way it is refused at once.
 */
export class AttestationGuard {
  private readonly secret: string;
  private warnedUnidentified = false;

  constructor(private readonly options: GuardOptions) {
    this.secret = options.secret;
  }

  /**
   * The attestation's claims, or null when it is missing, invalid or for another request. `url`
   * is request.url parsed.
   */
  async verify(request: Request, url: URL = new URL(request.url)): Promise<AttestationClaims | null> {
    const token = request.headers.get(ATTESTATION_HEADER);
    if (!token) return null;
    const accepted = this.accepted();
    if (accepted.length === 0 && !this.options.registering?.()) return null;
    // Any audience here: the signature, times and request first; the audience may need a wait.
    const claims = await verifyAttestation(
      token,
      this.secret,
      anyAudience,
      this.options.nowMs() / 1000,
      this.options.check,
      this.options.acceptance,
    );
    if (claims === null || !this.namesRequest(claims, request, url)) return null;
    if (!accepted.includes(claims.aud) && !(await this.acceptedOnceRegistered(claims.aud))) return null;
    return this.firstUse(claims) ? claims : null;
  }

  /** Whether this is the token's first accepted use (remembering it), or it has no id to tell. */
  private firstUse(claims: AttestationClaims): boolean {
    if (claims.jti === undefined) {
      if (this.options.requireBinding) return false;
      if (!this.warnedUnidentified) {
        this.warnedUnidentified = true;
        this.options.log?.warn(
          "attestation without jti accepted: a Pinboard in front predates single-use attestations, so its tokens can be replayed until they expire; set requireBoundAttestation once every Pinboard is upgraded",
          { aud: claims.aud },
        );
      }
      return true;
    }
    const deadline = acceptedUntil(claims, this.options.acceptance);
    return this.options.seen.admit(claims.jti, deadline, this.options.nowMs() / 1000);
  }

  async hasProxySecret(request: Request): Promise<boolean> {
    const given = request.headers.get(PROXY_SECRET_HEADER);
    // Stryker disable next-line ConditionalExpression: null compares as the text "null", never a worker secret (16+ characters)
    if (given === null) return false;
    return constantTimeEqual(given, this.secret);
  }

  private accepted(): string[] {
    return this.options.audiences().filter((aud): aud is string => !!aud);
  }

  /** Whether `aud` is accepted after the register under way, if any, has its answer. */
  private async acceptedOnceRegistered(aud: string): Promise<boolean> {
    // Read again: a register may have answered while the signature was checked.
    if (this.accepted().includes(aud)) return true;
    const registering = this.options.registering?.();
    if (!registering) return false;
    this.options.log?.info("attestation names a session not known yet: waiting for the register answer", { aud });
    await registering;
    return this.accepted().includes(aud);
  }

  private namesRequest(claims: AttestationClaims, request: Request, url: URL): boolean {
    // A token that names no epoch lets a malformed Pinboard-Epoch through, to be answered 400
    // malformed placement epoch; one that names an epoch (all of Pinboard's forwards) matches only
    // that header, so a malformed or missing one is refused here, 403. Never looser: the same token
    // on a route that reads no epoch (_pinned/stats) must not pass for a call without one.
    if (claims.epoch === undefined && isEpoch(request.headers.get(EPOCH_HEADER))) return false;
    if (!isBound(claims)) return !this.options.requireBinding;
    if (claims.htm !== request.method) return false;
    if ((claims.epoch ?? null) !== request.headers.get(EPOCH_HEADER)) return false;
    return claims.htu !== undefined && sameTarget(claims.htu, this.options.basePath, url);
  }
}

const anyAudience = (): boolean => true;

/**
 * Whether a call Pinboard sent to `{advertiseUrl}{htu}` is the one that arrived at `url`. Both go
 * through the WHATWG URL parser: the one that made `request.url` and that the routes and the
 * instance read it with. Pinboard's target already is that parser's output (its data plane reads
 * client paths with it, and its Node entry's fast path differs only by leaving `'` unescaped in
 * a query, which the parser escapes here on both sides), so a genuine call always compares
 * equal, and a target that compares equal is the same URL to everything behind the check.
 * Percent-encoding is compared as written: `/a` and `/%61` are different targets.
 */
export function sameTarget(htu: string, basePath: string, url: URL): boolean {
  let expected: URL;
  try {
    expected = new URL(`http://pinned.invalid${basePath}${htu}`);
  } catch {
    return false;
  }
  return expected.pathname === url.pathname && expected.search === url.search && expected.hash === url.hash;
}
