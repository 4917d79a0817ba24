import { base64url } from "../contract/base64url.ts";
import { BoundedLru } from "../contract/bounded-lru.ts";

/**
 * Accounts at rest: wherever an account reaches Redis (the worker record, the client owners, the
 * remembered session owners) it is stored as its tag, `a1.<key id>.<mac>`: the first 128 bits of
 * HMAC-SHA-256 of the account under a key derived with HKDF-SHA-256 from the same material as the
 * worker secrets' key (PINBOARD_SECRETS_KEY, else PINBOARD_PASSPORT_SECRET) with its own info
 * label. Deterministic, so an owner is still compared by equality, in Lua and here; unreadable
 * and unguessable without the key. The key id (48 bits of another HKDF output) tells a tag made
 * under another key from the tag of another account.
 *
 * Records, client owners and session owners written before tags existed hold the account itself
 * (legacy plaintext): it still matches its own account, and the scripts replace it with the tag
 * when they touch it (register-session, heartbeat-session).
 */

/** HKDF info labels: keys derived for these uses are useless for any other. */
export const ACCOUNT_TAGS_INFO = "pinboard account tags v1";
export const ACCOUNT_TAGS_KEY_ID_INFO = "pinboard account tags key id v1";
/** The tag's shape: version, the key id (6 bytes), the truncated MAC (16 bytes). */
const TAG = /^a1\.([A-Za-z0-9_-]{8})\.[A-Za-z0-9_-]{22}$/;
/** Tags kept in memory, one per account. */
const CACHED = 4096;

const encoder = new TextEncoder();

/** How a stored owner relates to the caller's account. */
export type Ownership = "own" | "other" | "unreadable";

export function isAccountTag(stored: string): boolean {
  return TAG.test(stored);
}

/**
 * `stored` (a record's or an owner entry's account) judged against the caller's `account` and its
 * `tag`: its own tag or, written before tags, the account itself is "own"; a tag under another
 * key is "unreadable" (this node cannot tell whose it is); anything else is another account's.
 */
export function ownership(stored: string, account: string, tag: string): Ownership {
  if (stored === tag || stored === account) return "own";
  const keyId = TAG.exec(stored)?.[1];
  return keyId !== undefined && keyId !== TAG.exec(tag)?.[1] ? "unreadable" : "other";
}

export class AccountTags {
  private key: Promise<{ mac: CryptoKey; keyId: string }> | undefined;
  private readonly tags = new BoundedLru<string, string | Promise<string>>(CACHED);

  constructor(private readonly keyMaterial: string) {}

  /** The tag stored for `account`: synchronously once this node computed it, else a promise. */
  tag(account: string): string | Promise<string> {
    const cached = this.tags.get(account);
    if (cached !== undefined) return cached;
    const computing = this.compute(account).then(
      (tag) => {
        this.tags.set(account, tag);
        return tag;
      },
      (err: unknown) => {
        this.tags.delete(account);
        throw err;
      },
    );
    this.tags.set(account, computing);
    return computing;
  }

  private async compute(account: string): Promise<string> {
    const { mac, keyId } = await this.derived();
    const sum = new Uint8Array(await crypto.subtle.sign("HMAC", mac, encoder.encode(account)));
    return `a1.${keyId}.${base64url(sum.subarray(0, 16))}`;
  }

  private derived(): Promise<{ mac: CryptoKey; keyId: string }> {
    this.key ??= deriveKeys(this.keyMaterial);
    return this.key;
  }
}

async function deriveKeys(material: string): Promise<{ mac: CryptoKey; keyId: string }> {
  const ikm = await crypto.subtle.importKey("raw", encoder.encode(material), "HKDF", false, [
    "deriveKey",
    "deriveBits",
  ]);
  const hkdf = (info: string) => ({
    name: "HKDF",
    hash: "SHA-256",
    salt: new Uint8Array(0),
    info: encoder.encode(info),
  });
  const mac = await crypto.subtle.deriveKey(
    hkdf(ACCOUNT_TAGS_INFO),
    ikm,
    { name: "HMAC", hash: "SHA-256", length: 256 },
    false,
    ["sign"],
  );
  const keyId = base64url(new Uint8Array(await crypto.subtle.deriveBits(hkdf(ACCOUNT_TAGS_KEY_ID_INFO), ikm, 48)));
  return { mac, keyId };
}
