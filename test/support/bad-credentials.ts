import { SignJWT } from "jose";
import { ALL, TEST_PASSPORT_SECRET } from "./pinboard-app.ts";

/**
 * Credentials Passport must refuse with 401, each otherwise perfect for `scopes` (a valid
 * pinboard claim, sub, account): expired, not yet valid, signed with another key, alg none,
 * another HMAC alg with the right key, an RS256 header over an HMAC signature, a payload swapped
 * under a valid signature, a stripped signature.
 */

const b64url = (text: string) => Buffer.from(text, "utf8").toString("base64url");
const key = (secret: string) => new TextEncoder().encode(secret);

export interface BadCredential {
  name: string;
  token: string;
}

export async function badCredentials(scopes: string[], extra: Record<string, unknown> = {}): Promise<BadCredential[]> {
  const now = Math.floor(Date.now() / 1000);
  const claims = { sub: "intruder", account: "intruder-account", scopes, pinboard: ALL, ...extra };
  const signed = (payload: Record<string, unknown>, alg = "HS256", secret = TEST_PASSPORT_SECRET) =>
    new SignJWT(payload).setProtectedHeader({ alg, typ: "JWT" }).sign(key(secret));

  const valid = await signed({ ...claims, iat: now, exp: now + 3600 });
  const [header, , signature] = valid.split(".") as [string, string, string];
  const swappedPayload = b64url(JSON.stringify({ ...claims, sub: "someone-else", iat: now, exp: now + 3600 }));
  const none = `${b64url(JSON.stringify({ alg: "none", typ: "JWT" }))}.${b64url(JSON.stringify({ ...claims, iat: now, exp: now + 3600 }))}.`;
  const noneUpper = `${b64url(JSON.stringify({ alg: "NONE" }))}.${b64url(JSON.stringify({ ...claims, iat: now, exp: now + 3600 }))}.`;
  const rsHeader = `${b64url(JSON.stringify({ alg: "RS256", typ: "JWT" }))}.${b64url(JSON.stringify({ ...claims, iat: now, exp: now + 3600 }))}`;
  const rsOverHmac = `${rsHeader}.${Buffer.from(
    new Uint8Array(
      await crypto.subtle.sign(
        "HMAC",
        await crypto.subtle.importKey("raw", key(TEST_PASSPORT_SECRET), { name: "HMAC", hash: "SHA-256" }, false, [
          "sign",
        ]),
        new TextEncoder().encode(rsHeader),
      ),
    ),
  ).toString("base64url")}`;

  return [
    // 2 minutes past exp: well beyond Passport's 30 s clock tolerance.
    { name: "expired", token: await signed({ ...claims, iat: now - 7200, exp: now - 120 }) },
    { name: "not yet valid (nbf)", token: await signed({ ...claims, iat: now, nbf: now + 600, exp: now + 3600 }) },
    {
      name: "wrongly signed",
      token: await signed(
        { ...claims, iat: now, exp: now + 3600 },
        "HS256",
        "another-passport-secret-0123456789abcdef",
      ),
    },
    { name: "alg none", token: none },
    { name: "alg NONE, no signature", token: noneUpper },
    { name: "alg none with the valid signature", token: `${none}${signature}` },
    { name: "HS512 with the right key", token: await signed({ ...claims, iat: now, exp: now + 3600 }, "HS512") },
    { name: "RS256 header over an HMAC signature", token: rsOverHmac },
    { name: "payload swapped under a valid signature", token: `${header}.${swappedPayload}.${signature}` },
    { name: "signature stripped", token: `${header}.${valid.split(".")[1]}.` },
    {
      name: "signature of another token",
      token: `${valid.split(".").slice(0, 2).join(".")}.${(await signed({ sub: "x" })).split(".")[2]}`,
    },
  ];
}
