import { jwtVerify } from "jose";
import { describe, expect, it } from "vitest";
import { signAttestation } from "../../../src/contract/attestation.ts";
import { nodeJwsHs256 } from "../../../src/runtime/node/jws.ts";

describe("nodeJwsHs256", () => {
  it("signs the very token Web Crypto signs, which jose verifies", async () => {
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
    expect(withNode).toBe(await signAttestation(secret, claims, now));
    const { payload } = await jwtVerify(withNode, new TextEncoder().encode(secret), {
      currentDate: new Date(now * 1000),
    });
    expect(payload).toEqual({
      aud: "session-1",
      iat: now,
      exp: now + 30,
      htm: "POST",
      htu: "/ns/id/x?y=1",
      epoch: "1796291010685762",
      caller: "/a/b",
      depth: 2,
    });
  });

  it("encodes a payload beyond ASCII as Web Crypto's path does (UTF-8)", async () => {
    const claims = { aud: "s", acct: { sub: "zoë 🦊", claims: { name: "Ünïcode" } } };
    expect(await signAttestation("k", claims, 5, nodeJwsHs256)).toBe(await signAttestation("k", claims, 5));
  });

  it("gives another signature under another secret", async () => {
    const claims = { aud: "s" };
    expect(await signAttestation("a", claims, 1, nodeJwsHs256)).not.toBe(
      await signAttestation("b", claims, 1, nodeJwsHs256),
    );
  });
});
