import { base64url, base64urlDecode } from "../contract/base64url.ts";
import { BoundedLru } from "../contract/bounded-lru.ts";
import type { Logger } from "../log/logger.ts";

/**
 * Worker secrets at rest: a worker record holds `v1.<iv>.<ciphertext>` (base64url), AES-256-GCM
 * with a random 96-bit IV per write and the record's sessionId as additional data, so a sealed
 * secret copied into another record does not open. The key is HKDF-SHA-256 of PINBOARD_SECRETS_KEY,
 * else of PINBOARD_PASSPORT_SECRET (the same derivation: setting PINBOARD_SECRETS_KEY to the passport
 * secret in use keeps every record readable across a passport rotation).
 *
 * A stored value that is not of the sealed shape is a record written before sealing existed
 * (legacy plaintext): it is used as is, and the worker's next heartbeat seals it (heartbeat.ts).
 */

/** The HKDF info label: a key derived for this use is useless for any other. */
export const WORKER_SECRETS_INFO = "pinboard worker secrets v1";
/** The sealed shape: version, a 12-byte IV, at least the 16-byte tag. */
const SEALED = /^v1\.([A-Za-z0-9_-]{16})\.([A-Za-z0-9_-]{22,})$/;
/** Opened secrets kept in memory, one per session. */
const CACHED = 4096;

const encoder = new TextEncoder();
const decoder = new TextDecoder("utf-8", { fatal: true });

/** A sealed secret that does not open under this node's key (another key, or a record it was not sealed for). */
export class UnreadableSecretError extends Error {
  constructor(readonly sessionId: string) {
    super(`worker secret of session ${sessionId} is unreadable`);
    this.name = "UnreadableSecretError";
  }
}

export function isSealed(stored: string): boolean {
  return SEALED.test(stored);
}

export class WorkerSecrets {
  private key: Promise<CryptoKey> | undefined;
  /** sessionId → the stored value last opened for it, and the secret (or the pending or failed opening). */
  private readonly opened = new BoundedLru<string, { stored: string; secret: string | Promise<string> }>(CACHED);

  constructor(
    private readonly keyMaterial: string,
    private readonly log: Pick<Logger, "error">,
  ) {}

  /** The value to store for `secret` in the record of `sessionId`. */
  async seal(sessionId: string, secret: string): Promise<string> {
    const iv = crypto.getRandomValues(new Uint8Array(12));
    const sealed = await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: encoder.encode(sessionId) },
      await this.cryptoKey(),
      encoder.encode(secret),
    );
    return `v1.${base64url(iv)}.${base64url(new Uint8Array(sealed))}`;
  }

  /**
   * The secret a record of `sessionId` stores as `stored`: synchronously when this node opened it
   * before (every forward after the first to a worker), else a promise. Rejects with
   * UnreadableSecretError, logged once per value, when it does not open.
   */
  open(sessionId: string, stored: string): string | Promise<string> {
    // Keyed by session, the stored value compared: a value opened for one session is never
    // handed out for another, and a hit costs no concatenation or pattern match.
    const cached = this.opened.get(sessionId);
    if (cached !== undefined && cached.stored === stored) return cached.secret;
    const match = SEALED.exec(stored);
    if (match === null) return stored;
    const entry: { stored: string; secret: string | Promise<string> } = { stored, secret: "" };
    const opening = this.decrypt(sessionId, match[1]!, match[2]!).then(
      (secret) => {
        entry.secret = secret;
        return secret;
      },
      (err: unknown) => {
        this.log.error(
          "worker secret unreadable: sealed under another key (PINBOARD_SECRETS_KEY, else PINBOARD_PASSPORT_SECRET) " +
            "or for another record; the worker must register again",
          { sessionId, error: err instanceof Error ? err.name : "error" },
        );
        throw new UnreadableSecretError(sessionId);
      },
    );
    opening.catch(() => {});
    entry.secret = opening;
    this.opened.set(sessionId, entry);
    return opening;
  }

  private async decrypt(sessionId: string, iv: string, sealed: string): Promise<string> {
    const plain = await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: base64urlDecode(iv)!, additionalData: encoder.encode(sessionId) },
      await this.cryptoKey(),
      base64urlDecode(sealed)!,
    );
    return decoder.decode(plain);
  }

  private cryptoKey(): Promise<CryptoKey> {
    this.key ??= deriveKey(this.keyMaterial);
    return this.key;
  }
}

async function deriveKey(material: string): Promise<CryptoKey> {
  const ikm = await crypto.subtle.importKey("raw", encoder.encode(material), "HKDF", false, ["deriveKey"]);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: encoder.encode(WORKER_SECRETS_INFO) },
    ikm,
    { name: "AES-GCM", length: 256 },
    false,
    ["encrypt", "decrypt"],
  );
}
