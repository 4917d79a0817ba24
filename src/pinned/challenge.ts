import { base64url } from "../contract/base64url.ts";

/**
 * The registration challenge. Every register mints a fresh random (challenge, challengeValue)
 * pair; GET /_pinned/challenge answers the value for the current challenge only, so a probe
 * that reaches this process proves the advertise URL belongs to this registration.
 */
export interface ChallengePair {
  challenge: string;
  challengeValue: string;
}

export class ChallengeState {
  private pair: ChallengePair | null = null;

  /** Mints the pair for the next registration and makes it the one answered. */
  rotate(): ChallengePair {
    this.pair = { challenge: randomToken(16), challengeValue: randomToken(24) };
    return this.pair;
  }

  get current(): ChallengePair | null {
    return this.pair;
  }

  /** The value for `challenge`, or null when it is not the current one. */
  answer(challenge: string | undefined): string | null {
    if (!this.pair || challenge === undefined || challenge !== this.pair.challenge) return null;
    return this.pair.challengeValue;
  }
}

export function randomToken(bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}
