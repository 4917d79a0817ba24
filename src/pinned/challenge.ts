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
  const buf = crypto.getRandomValues(new Uint8Array(bytes));
  return btoa(String.fromCharCode(...buf)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

const encoder = new TextEncoder();

/**
 * Compares two secrets without leaking where they differ: both are hashed to SHA-256 first, so
 * the loop below always runs over 32 bytes whatever the inputs' lengths.
 */
export async function secretsEqual(given: string, expected: string): Promise<boolean> {
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", encoder.encode(given)),
    crypto.subtle.digest("SHA-256", encoder.encode(expected)),
  ]);
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}
