import { createDecipheriv, hkdfSync } from "node:crypto";
import { describe, expect, it } from "vitest";
import { isSealed, UnreadableSecretError, WorkerSecrets } from "../../src/auth/worker-secrets.ts";

/** A logger that keeps its error lines. */
function errorLog(): { lines: string[]; error(message: string, fields?: Record<string, unknown>): void } {
  const lines: string[] = [];
  return { lines, error: (message, fields) => lines.push(`${message} ${JSON.stringify(fields ?? {})}`) };
}

const KEY = "the-passport-secret-of-this-fleet-0123456789";
const SECRET = "worker-secret-0123456789";

async function refusal(opened: string | Promise<string>): Promise<unknown> {
  try {
    await opened;
  } catch (err) {
    return err;
  }
  return expect.unreachable("opened");
}

describe("worker secrets at rest", () => {
  it("seals as v1.<iv>.<ciphertext>, a fresh IV each time, and opens to the secret", async () => {
    const secrets = new WorkerSecrets(KEY, errorLog());
    const a = await secrets.seal("s1", SECRET);
    const b = await secrets.seal("s1", SECRET);
    for (const sealed of [a, b]) {
      expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{54}$/);
      expect(isSealed(sealed)).toBe(true);
      expect(sealed).not.toContain(SECRET);
      expect(await secrets.open("s1", sealed)).toBe(SECRET);
    }
    expect(a).not.toBe(b);
  });

  it("is AES-256-GCM under HKDF-SHA-256(key, no salt, the info label), with the sessionId as additional data", async () => {
    const sealed = await new WorkerSecrets(KEY, errorLog()).seal("session-42", SECRET);
    const [, iv, body] = sealed.split(".") as [string, string, string];
    const bytes = Buffer.from(body, "base64url");
    const key = Buffer.from(hkdfSync("sha256", KEY, Buffer.alloc(0), "pinboard worker secrets v1", 32));
    const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64url"));
    decipher.setAAD(Buffer.from("session-42"));
    decipher.setAuthTag(bytes.subarray(bytes.length - 16));
    expect(Buffer.concat([decipher.update(bytes.subarray(0, bytes.length - 16)), decipher.final()]).toString()).toBe(
      SECRET,
    );
  });

  it("opens a value it opened before synchronously", async () => {
    const secrets = new WorkerSecrets(KEY, errorLog());
    const sealed = await secrets.seal("s1", SECRET);
    expect(typeof secrets.open("s1", sealed)).toBe("object");
    await secrets.open("s1", sealed);
    expect(secrets.open("s1", sealed)).toBe(SECRET);
  });

  it("takes a value of another shape as a record written before sealing (legacy plaintext)", () => {
    const secrets = new WorkerSecrets(KEY, errorLog());
    for (const legacy of [SECRET, "v1.not-sealed-at-all-0123", "v2.AAAAAAAAAAAAAAAA.AAAAAAAAAAAAAAAAAAAAAA"]) {
      expect(isSealed(legacy)).toBe(false);
      expect(secrets.open("s1", legacy)).toBe(legacy);
    }
  });

  it("refuses a sealed secret moved into another session's record, even after opening it for its own", async () => {
    const log = errorLog();
    const secrets = new WorkerSecrets(KEY, log);
    const sealed = await secrets.seal("victim", SECRET);
    expect(await secrets.open("victim", sealed)).toBe(SECRET);
    const err = await refusal(secrets.open("thief", sealed));
    expect(err).toBeInstanceOf(UnreadableSecretError);
    expect((err as Error).message).toBe("worker secret of session thief is unreadable");
    expect(log.lines).toEqual([
      "worker secret unreadable: sealed under another key (PINBOARD_SECRETS_KEY, else PINBOARD_PASSPORT_SECRET) " +
        'or for another record; the worker must register again {"sessionId":"thief","error":"OperationError"}',
    ]);
  });

  it("refuses under another key, logging once per value and never the value", async () => {
    const sealed = await new WorkerSecrets(KEY, errorLog()).seal("s1", SECRET);
    const log = errorLog();
    const other = new WorkerSecrets("another-key-of-another-fleet-0123456789", log);
    expect(await refusal(other.open("s1", sealed))).toBeInstanceOf(UnreadableSecretError);
    expect(await refusal(other.open("s1", sealed))).toBeInstanceOf(UnreadableSecretError);
    expect(log.lines).toHaveLength(1);
    expect(log.lines[0]).toContain('"sessionId":"s1"');
    expect(log.lines[0]).not.toContain(sealed);
    expect(log.lines[0]).not.toContain(SECRET);
  });

  it("refuses a tampered ciphertext or IV", async () => {
    const secrets = new WorkerSecrets(KEY, errorLog());
    const sealed = await secrets.seal("s1", SECRET);
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === "A" ? "B" : "A") + text.slice(at + 1);
    for (const tampered of [flip(sealed, 5), flip(sealed, sealed.length - 3)]) {
      expect(isSealed(tampered)).toBe(true);
      expect(await refusal(secrets.open("s1", tampered))).toBeInstanceOf(UnreadableSecretError);
    }
  });
});
