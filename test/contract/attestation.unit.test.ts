import { decodeProtectedHeader, jwtVerify, SignJWT } from "jose";
import { describe, expect, it, vi } from "vitest";
import {
  acceptedUntil,
  attestationTarget,
  type SyncJwsHs256,
  signAttestation,
  verifyAttestation,
} from "../../src/contract/attestation.ts";
import { attestationId, encodeId } from "../../src/contract/attestation-id.ts";

const secret = "worker-secret-worker-secret-0001";
const now = 1_800_000_000;

const JTI = expect.stringMatching(/^[A-Za-z0-9_-]{22}$/);

function decodePart(part: string): unknown {
  return JSON.parse(Buffer.from(part, "base64url").toString("utf8"));
}

describe("signAttestation", () => {
  it("writes the header exactly as the spec fixes it", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    const [header] = token.split(".");
    expect(Buffer.from(header!, "base64url").toString("utf8")).toBe('{"alg":"HS256","typ":"pinboard+jwt"}');
  });

  it("carries aud, iat and exp = iat + 30, plus the optional claims", async () => {
    const acct = { sub: "user-1", scopes: ["read"], claims: { team: "a" } };
    const token = await signAttestation(secret, { aud: "sess-1", caller: "/threads/t1", depth: 2, acct }, now + 0.7);
    expect(decodePart(token.split(".")[1]!)).toEqual({
      aud: "sess-1",
      iat: now,
      exp: now + 30,
      jti: JTI,
      caller: "/threads/t1",
      depth: 2,
      acct,
    });
    const minimal = await signAttestation(secret, { aud: "sess-1" }, now);
    expect(decodePart(minimal.split(".")[1]!)).toEqual({ aud: "sess-1", iat: now, exp: now + 30, jti: JTI });
  });

  it("carries its jti right after exp, then the request binding, htm, htu and epoch", async () => {
    const token = await signAttestation(
      secret,
      { aud: "sess-1", htm: "PUT", htu: "/counter/c1/x?y=1", epoch: "42", depth: 1 },
      now,
    );
    const payload = Buffer.from(token.split(".")[1]!, "base64url").toString("utf8");
    const jti = (JSON.parse(payload) as { jti: string }).jti;
    expect(payload).toBe(
      `{"aud":"sess-1","iat":${now},"exp":${now + 30},"jti":"${jti}","htm":"PUT","htu":"/counter/c1/x?y=1","epoch":"42","depth":1}`,
    );
  });

  it("is a standard HS256 JWS that jose verifies", async () => {
    const token = await signAttestation(secret, { aud: "sess-1", acct: { sub: "ünïcode" } }, now);
    const { payload, protectedHeader } = await jwtVerify(token, new TextEncoder().encode(secret), {
      algorithms: ["HS256"],
      typ: "pinboard+jwt",
      audience: "sess-1",
      currentDate: new Date(now * 1000),
    });
    expect(protectedHeader).toEqual({ alg: "HS256", typ: "pinboard+jwt" });
    expect(payload.acct).toEqual({ sub: "ünïcode" });
    expect(decodeProtectedHeader(token).typ).toBe("pinboard+jwt");
  });

  it("signs with each secret's own key", async () => {
    const a = await signAttestation(secret, { aud: "s" }, now);
    const b = await signAttestation(`${secret}-other`, { aud: "s" }, now);
    expect(a.split(".")[2]).not.toBe(b.split(".")[2]);
  });
});

describe("signAttestation, one id per token", () => {
  it("gives every token a jti of its own, even for the same call in the same second", async () => {
    const claims = { aud: "sess-r", htm: "GET", htu: "/counter/c1/x", epoch: "7" };
    const tokens = await Promise.all(Array.from({ length: 300 }, () => signAttestation(secret, claims, now + 0.5)));
    const ids = tokens.map((token) => (decodePart(token.split(".")[1]!) as { jti: string }).jti);
    expect(new Set(tokens).size).toBe(300);
    expect(new Set(ids).size).toBe(300);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
    expect(await verifyAttestation(tokens[299]!, secret, "sess-r", now)).toEqual({
      ...claims,
      iat: now,
      exp: now + 30,
      jti: ids[299],
    });
  });

  it("signs with the runtime's synchronous signer every time, each payload with a fresh jti", async () => {
    const signings: string[] = [];
    const jws: SyncJwsHs256 = (key, header, payloadJson) => {
      signings.push(payloadJson);
      return `${header}.${Buffer.from(payloadJson).toString("base64url")}.${key === secret ? "A" : "B"}`;
    };
    const claims = { aud: "sess-j", htm: "GET", htu: "/counter/j1", epoch: "9" };
    const first = await signAttestation(secret, claims, now + 0.1, jws);
    expect(await signAttestation(secret, { ...claims }, now + 0.7, jws)).not.toBe(first);
    expect(first.endsWith(".A")).toBe(true);
    expect((await signAttestation("another-secret-another-secret-02", claims, now, jws)).endsWith(".B")).toBe(true);
    expect(signings).toHaveLength(3);
    const payloads = signings.map((json) => JSON.parse(json) as Record<string, unknown>);
    expect(new Set(payloads.map((p) => p.jti)).size).toBe(3);
    expect(payloads[0]).toEqual({ ...claims, iat: now, exp: now + 30, jti: payloads[0]!.jti });
  });
});

describe("encodeId", () => {
  it("is base64url of the 16 bytes at the offset, unpadded", () => {
    const bytes = new Uint8Array(40);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 73 + 11) & 255;
    for (const offset of [0, 7, 24]) {
      expect(encodeId(bytes, offset)).toBe(Buffer.from(bytes.subarray(offset, offset + 16)).toString("base64url"));
    }
    expect(encodeId(new Uint8Array(16).fill(255), 0)).toBe("_____________________w");
    expect(encodeId(new Uint8Array(16), 0)).toBe("AAAAAAAAAAAAAAAAAAAAAA");
  });

  it("attestationId draws fresh ids past a batch of random bytes, asking for bytes once per 256 ids", () => {
    const draws = vi.spyOn(crypto, "getRandomValues");
    try {
      const ids = Array.from({ length: 512 }, () => attestationId());
      expect(new Set(ids).size).toBe(512);
      for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_-]{22}$/);
      expect(draws).toHaveBeenCalledTimes(2);
      for (const [bytes] of draws.mock.calls) expect((bytes as Uint8Array).byteLength).toBe(16 * 256);
    } finally {
      draws.mockRestore();
    }
  });
});

describe("attestationTarget", () => {
  it("is the called URL's path after the advertise URL's path, with its query", () => {
    expect(attestationTarget("http://10.0.0.7:9001/_pinned/stats", "http://10.0.0.7:9001")).toBe("/_pinned/stats");
    expect(attestationTarget("http://10.0.0.7:9001/pre/counter/c1/_wake", "http://10.0.0.7:9001/pre")).toBe(
      "/counter/c1/_wake",
    );
    expect(attestationTarget("http://10.0.0.7:9001/pre/counter/c%201/x?y=%27", "http://10.0.0.7:9001/pre/")).toBe(
      "/counter/c%201/x?y=%27",
    );
  });
});

describe("verifyAttestation", () => {
  it("returns the claims of a valid token", async () => {
    const token = await signAttestation(secret, { aud: "sess-1", caller: "/a/b", depth: 1, acct: { sub: "u" } }, now);
    expect(await verifyAttestation(token, secret, "sess-1", now)).toEqual({
      aud: "sess-1",
      iat: now,
      exp: now + 30,
      jti: JTI,
      caller: "/a/b",
      depth: 1,
      acct: { sub: "u" },
    });
  });

  it("returns the request binding, and accepts any of several audiences", async () => {
    const token = await signAttestation(secret, { aud: "sess-2", htm: "GET", htu: "/_pinned/stats" }, now);
    expect(await verifyAttestation(token, secret, ["sess-1", "sess-2"], now)).toEqual({
      aud: "sess-2",
      iat: now,
      exp: now + 30,
      jti: JTI,
      htm: "GET",
      htu: "/_pinned/stats",
    });
    expect(await verifyAttestation(token, secret, ["sess-1", "local"], now)).toBeNull();
    expect(await verifyAttestation(token, secret, [], now)).toBeNull();
  });

  it("asks an audience predicate only about a genuine token, and follows its answer", async () => {
    const token = await signAttestation(secret, { aud: "sess-3" }, now);
    const asked: string[] = [];
    const only = (wanted: string) => (aud: string) => {
      asked.push(aud);
      return aud === wanted;
    };
    expect(await verifyAttestation(token, secret, only("sess-3"), now)).toEqual({
      aud: "sess-3",
      iat: now,
      exp: now + 30,
      jti: JTI,
    });
    expect(await verifyAttestation(token, secret, only("sess-4"), now)).toBeNull();
    expect(await verifyAttestation(token, `${secret}-other`, only("sess-3"), now)).toBeNull();
    expect(asked).toEqual(["sess-3", "sess-3"]);
  });

  it("rejects binding claims of the wrong type", async () => {
    const key = new TextEncoder().encode(secret);
    const base = { aud: "sess-1", iat: now, exp: now + 30 };
    const sign = (extra: Record<string, unknown>) =>
      new SignJWT({ ...base, ...extra }).setProtectedHeader({ alg: "HS256", typ: "pinboard+jwt" }).sign(key);
    for (const bad of [
      { htm: "" },
      { htm: 1 },
      { htu: "counter/c1" },
      { htu: ["/a"] },
      { epoch: 7 },
      { epoch: "7a" },
      { epoch: "" },
      { jti: 7 },
      { jti: "a".repeat(15) },
      { jti: "a".repeat(65) },
      { jti: "abcdefgh+jklmnop" },
      { jti: "abcdefgh jklmnop" },
      { jti: "" },
    ]) {
      expect(await verifyAttestation(await sign(bad), secret, "sess-1", now)).toBeNull();
    }
    expect(
      await verifyAttestation(await sign({ htm: "GET", htu: "/a", epoch: "7" }), secret, "sess-1", now),
    ).not.toBeNull();
    for (const jti of ["a".repeat(16), `${"Az09_-".repeat(10)}abcd`]) {
      expect((await verifyAttestation(await sign({ jti }), secret, "sess-1", now))?.jti).toBe(jti);
    }
  });

  it("rejects another audience and another secret", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    expect(await verifyAttestation(token, secret, "sess-2", now)).toBeNull();
    expect(await verifyAttestation(token, `${secret}-other`, "sess-1", now)).toBeNull();
  });

  it("accepts within 30 s of skew and rejects beyond it", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    // exp = now + 30; skew 30 s: valid while t < now + 60.
    expect(await verifyAttestation(token, secret, "sess-1", now + 59)).not.toBeNull();
    expect(await verifyAttestation(token, secret, "sess-1", now + 60)).toBeNull();
    expect(await verifyAttestation(token, secret, "sess-1", now + 3600)).toBeNull();
    // A signer whose clock runs ahead: iat up to 30 s in the future is fine.
    expect(await verifyAttestation(token, secret, "sess-1", now - 30)).not.toBeNull();
    expect(await verifyAttestation(token, secret, "sess-1", now - 31)).toBeNull();
  });

  it("accepts within a tighter life and skew when asked: now < min(exp, iat + maxAgeS) + skewS", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    const tight = { maxAgeS: 10, skewS: 5 };
    const at = (t: number, acceptance = tight) => verifyAttestation(token, secret, "sess-1", t, undefined, acceptance);
    expect(acceptedUntil({ iat: now, exp: now + 30 }, tight)).toBe(now + 15);
    expect(await at(now + 14.9)).not.toBeNull();
    expect(await at(now + 15)).toBeNull();
    expect(await at(now - 5)).not.toBeNull();
    expect(await at(now - 5.1)).toBeNull();
    // The token's own exp still bounds it when maxAgeS is longer.
    const loose = { maxAgeS: 100, skewS: 0 };
    expect(acceptedUntil({ iat: now, exp: now + 30 }, loose)).toBe(now + 30);
    expect(await at(now + 29.9, loose)).not.toBeNull();
    expect(await at(now + 30, loose)).toBeNull();
    expect(await at(now - 0.1, loose)).toBeNull();
  });

  it("rejects a token whose typ is not pinboard+jwt, or whose alg is not HS256", async () => {
    const key = new TextEncoder().encode(secret);
    const claims = { aud: "sess-1", iat: now, exp: now + 30 };
    const jwt = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "JWT" }).sign(key);
    expect(await verifyAttestation(jwt, secret, "sess-1", now)).toBeNull();
    const untyped = await new SignJWT(claims).setProtectedHeader({ alg: "HS256" }).sign(key);
    expect(await verifyAttestation(untyped, secret, "sess-1", now)).toBeNull();
    const hs512 = await new SignJWT(claims).setProtectedHeader({ alg: "HS512", typ: "pinboard+jwt" }).sign(key);
    expect(await verifyAttestation(hs512, secret, "sess-1", now)).toBeNull();
    const typed = await new SignJWT(claims).setProtectedHeader({ alg: "HS256", typ: "pinboard+jwt" }).sign(key);
    expect(await verifyAttestation(typed, secret, "sess-1", now)).not.toBeNull();
  });

  it("rejects tampering and garbage", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    const [h, , s] = token.split(".");
    const forged = Buffer.from(JSON.stringify({ aud: "sess-1", iat: now, exp: now + 3600 })).toString("base64url");
    expect(await verifyAttestation(`${h}.${forged}.${s}`, secret, "sess-1", now)).toBeNull();
    expect(await verifyAttestation(`${token}x`, secret, "sess-1", now)).toBeNull();
    expect(await verifyAttestation(`${h}.${forged}.`, secret, "sess-1", now)).toBeNull();
    expect(await verifyAttestation("a.b", secret, "sess-1", now)).toBeNull();
    expect(await verifyAttestation("!!.??.**", secret, "sess-1", now)).toBeNull();
    expect(await verifyAttestation("", secret, "sess-1", now)).toBeNull();
  });

  it("checks the signature with the runtime's synchronous check when given one, and with it alone", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, now);
    const [h, p, sig] = token.split(".") as [string, string, string];
    const seen: Array<[string, string]> = [];
    const answering = (answer: boolean) => (input: string, signature: Uint8Array) => {
      seen.push([input, Buffer.from(signature).toString("base64url")]);
      return answer;
    };
    expect(await verifyAttestation(token, secret, "sess-1", now, answering(true))).toEqual({
      aud: "sess-1",
      iat: now,
      exp: now + 30,
      jti: JTI,
    });
    expect(seen).toEqual([[`${h}.${p}`, sig]]);
    // A check that refuses wins over a signature Web Crypto would accept, and one that accepts
    // over a secret that did not sign: the check is the only signature check made.
    expect(await verifyAttestation(token, secret, "sess-1", now, answering(false))).toBeNull();
    expect(await verifyAttestation(token, "another secret", "sess-1", now, answering(true))).not.toBeNull();
    // The header and the claims are still the verifier's own to judge.
    expect(await verifyAttestation(token, secret, "sess-2", now, answering(true))).toBeNull();
    expect(await verifyAttestation(token, secret, "sess-1", now + 3600, answering(true))).toBeNull();
  });

  it("defaults to the system clock", async () => {
    const token = await signAttestation(secret, { aud: "sess-1" }, Date.now() / 1000);
    expect(await verifyAttestation(token, secret, "sess-1")).not.toBeNull();
  });
});
