import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { signAttestation, verifyAttestation } from "../../../src/contract/attestation.ts";
import { nodeJwsHs256 } from "../../../src/runtime/node/jws.ts";

const decodePart = (part: string): unknown => JSON.parse(Buffer.from(part, "base64url").toString("utf8"));

describe("nodeJwsHs256", () => {
  it("signs a token Web Crypto's verify and jose accept, with the claims as given", async () => {
    const secret = "worker-secret-0123456789";
    const claims = {
      aud: "session-1",
      htm: "POST",
      htu: "/ns/id/x?y=1",
      epoch: "1796291010685762",
      caller: "/a/b",
      depth: 2,
    };
    const now = 1_800_000_000;
    const withNode = await signAttestation(secret, claims, now, nodeJwsHs256);
    const { jti } = decodePart(withNode.split(".")[1]!) as { jti: string };
    // No synchronous check given: crypto.subtle.verify judges the node:crypto signature.
    expect(await verifyAttestation(withNode, secret, "session-1", now)).toEqual({
      ...claims,
      iat: now,
      exp: now + 30,
      jti,
    });
    const { payload } = await jwtVerify(withNode, new TextEncoder().encode(secret), {
      currentDate: new Date(now * 1000),
    });
    expect(payload).toEqual({ ...claims, iat: now, exp: now + 30, jti });
  });

  it("encodes a payload beyond ASCII as Web Crypto's path does (UTF-8)", async () => {
    const claims = { aud: "s", acct: { sub: "zoë 🦊", claims: { name: "Ünïcode" } } };
    const token = await signAttestation("k", claims, 5, nodeJwsHs256);
    expect((await verifyAttestation(token, "k", "s", 5))?.acct).toEqual(claims.acct);
    const [header, payload] = token.split(".") as [string, string];
    // The same header and payload bytes, signed by Web Crypto: the same signature.
    const key = await crypto.subtle.importKey("raw", Buffer.from("k"), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    const mac = await crypto.subtle.sign("HMAC", key, Buffer.from(`${header}.${payload}`));
    expect(token).toBe(`${header}.${payload}.${Buffer.from(mac).toString("base64url")}`);
    expect(Buffer.from(payload, "base64url").toString("utf8")).toContain('"sub":"zoë 🦊"');
  });

  it("gives another signature under another secret", async () => {
    const claims = { aud: "s" };
    const a = await signAttestation("a", claims, 1, nodeJwsHs256);
    expect(await verifyAttestation(a, "a", "s", 1)).not.toBeNull();
    expect(await verifyAttestation(a, "b", "s", 1)).toBeNull();
  });
});
