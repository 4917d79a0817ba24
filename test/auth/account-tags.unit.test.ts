import { createHmac, hkdfSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AccountTags, isAccountTag, ownership } from "../../src/auth/account-tags.ts";

const KEY = "the-passport-secret-of-this-fleet-0123456789";
const OTHER_KEY = "another-key-of-another-fleet-0123456789";
const ACCOUNT = "acct-Zq9-unique";

describe("account tags", () => {
  it("is a1.<key id>.<first 128 bits of HMAC-SHA-256 under HKDF-SHA-256(key, no salt, its info label)>", async () => {
    const tag = await new AccountTags(KEY).tag(ACCOUNT);
    const hkdf = (info: string, length: number) => Buffer.from(hkdfSync("sha256", KEY, Buffer.alloc(0), info, length));
    const mac = createHmac("sha256", hkdf("pinboard account tags v1", 32)).update(ACCOUNT).digest();
    const keyId = hkdf("pinboard account tags key id v1", 6).toString("base64url");
    expect(tag).toBe(`a1.${keyId}.${mac.subarray(0, 16).toString("base64url")}`);
    expect(tag).toMatch(/^a1\.[A-Za-z0-9_-]{8}\.[A-Za-z0-9_-]{22}$/);
    expect(isAccountTag(tag)).toBe(true);
    expect(tag).not.toContain(ACCOUNT);
  });

  it("is deterministic per key, differs per account and per key, and is cached (synchronous once computed)", async () => {
    const tags = new AccountTags(KEY);
    const first = tags.tag(ACCOUNT);
    expect(typeof first).toBe("object");
    const tag = await first;
    expect(tags.tag(ACCOUNT)).toBe(tag);
    expect(await new AccountTags(KEY).tag(ACCOUNT)).toBe(tag);
    expect(await tags.tag("acct-other")).not.toBe(tag);
    expect(await new AccountTags(OTHER_KEY).tag(ACCOUNT)).not.toBe(tag);
  });

  it("judges a stored owner: own tag or (written before tags) the account itself; a tag under another key is unreadable", async () => {
    const tag = await new AccountTags(KEY).tag(ACCOUNT);
    const othersTag = await new AccountTags(KEY).tag("acct-other");
    const foreignTag = await new AccountTags(OTHER_KEY).tag(ACCOUNT);
    expect(ownership(tag, ACCOUNT, tag)).toBe("own");
    expect(ownership(ACCOUNT, ACCOUNT, tag)).toBe("own");
    expect(ownership(othersTag, ACCOUNT, tag)).toBe("other");
    expect(ownership("acct-other", ACCOUNT, tag)).toBe("other");
    expect(ownership(foreignTag, ACCOUNT, tag)).toBe("unreadable");
    expect(isAccountTag(ACCOUNT)).toBe(false);
  });
});
