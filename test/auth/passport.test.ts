import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PinboardClaim } from "../../src/auth/claims.ts";
import { mintCredential } from "../../src/auth/mint.ts";
import { createPassport, KeySourceUnavailable, type Principal } from "../../src/auth/passport.ts";
import { PinboardError } from "../../src/errors/pinboard-error.ts";

const secret = "passport-secret-passport-secret-0001";
const key = new TextEncoder().encode(secret);
const claim: PinboardClaim = { namespaces: ["/threads"], allowedBackendHosts: ["127.0.0.1"] };
const passport = createPassport({ secret });
const bearer = (token: string) => `Bearer ${token}`;
const nowS = () => Math.floor(Date.now() / 1000);
/** A pinboard:worker credential for sub "w" with `claim`, minted with `more` (ttlSeconds, nowSeconds). */
const workerCredential = (more: Partial<Parameters<typeof mintCredential>[0]>) =>
  mintCredential({ secret, sub: "w", scopes: ["pinboard:worker"], pinboard: claim, ...more });

async function rejection(promise: Promise<unknown>): Promise<{ status: number; body: unknown }> {
  const err = await promise.then(
    () => expect.unreachable("expected a rejection"),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(PinboardError);
  const { status, body } = err as PinboardError;
  return { status, body };
}
const UNAUTHORIZED = { status: 401, body: { error: "unauthorized" } };
const FORBIDDEN = { status: 403, body: { error: "forbidden" } };

function sign(payload: JWTPayload, alg = "HS256", signingKey: Parameters<SignJWT["sign"]>[0] = key) {
  return new SignJWT(payload).setProtectedHeader({ alg }).setIssuedAt().setExpirationTime("1h").sign(signingKey);
}

describe("HS256 passport", () => {
  it("accepts a worker and an operator credential", async () => {
    const worker = await mintCredential({ secret, sub: "w1", scopes: ["pinboard:worker"], pinboard: claim });
    const p: Principal = await passport.authenticate(bearer(worker), "pinboard:worker");
    expect(p).toMatchObject({ sub: "w1", account: "w1", scopes: ["pinboard:worker"], pinboard: claim });
    expect(p.claims.sub).toBe("w1");
    expect(typeof p.claims.exp).toBe("number");

    const operator = await mintCredential({
      secret,
      sub: "ops",
      account: "acct-9",
      scopes: ["pinboard:operator"],
      pinboard: { namespaces: ["*"], allowedBackendHosts: [] },
    });
    const o = await passport.authenticate(`bearer  ${operator}`, "pinboard:operator");
    expect(o).toMatchObject({ sub: "ops", account: "acct-9", scopes: ["pinboard:operator"] });
  });

  it("accepts the space-separated scope form and merges both forms", async () => {
    const token = await sign({ sub: "w", scope: "openid pinboard:worker", pinboard: claim });
    const p = await passport.authenticate(bearer(token), "pinboard:worker");
    expect(p.scopes).toEqual(["openid", "pinboard:worker"]);
    const both = await sign({ sub: "w", scopes: ["pinboard:operator"], scope: "pinboard:worker", pinboard: claim });
    expect((await passport.authenticate(bearer(both), "pinboard:worker")).scopes).toEqual([
      "pinboard:operator",
      "pinboard:worker",
    ]);
  });

  it("accepts a credential without exp (minted with --ttl 0)", async () => {
    const token = await workerCredential({ ttlSeconds: 0 });
    await expect(passport.authenticate(bearer(token), "pinboard:worker")).resolves.toMatchObject({ sub: "w" });
  });

  describe("401", () => {
    it.each([
      ["a missing header", undefined],
      ["an empty header", ""],
      ["another scheme", "Basic dXNlcjpwYXNz"],
      ["Bearer without a token", "Bearer "],
      ["garbage", "Bearer not-a-jwt"],
      ["three garbage parts", "Bearer a.b.c"],
    ])("for %s", async (_name, header) => {
      expect(await rejection(passport.authenticate(header, "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for an expired credential", async () => {
      const token = await workerCredential({ ttlSeconds: 60, nowSeconds: nowS() - 3600 });
      expect(await rejection(passport.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("within the clock tolerance, not beyond it", async () => {
      const at = (expiredFor: number) =>
        workerCredential({ ttlSeconds: 60, nowSeconds: 1_800_000_000 - 60 - expiredFor });
      const clocked = createPassport({ secret }, { now: () => 1_800_000_000_000 });
      await expect(clocked.authenticate(bearer(await at(20)), "pinboard:worker")).resolves.toBeDefined();
      expect(await rejection(clocked.authenticate(bearer(await at(31)), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for a credential that is not yet valid", async () => {
      const token = await new SignJWT({ sub: "w", scopes: ["pinboard:worker"], pinboard: claim })
        .setProtectedHeader({ alg: "HS256" })
        .setNotBefore(nowS() + 3600)
        .sign(key);
      expect(await rejection(passport.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for a credential signed with another secret", async () => {
      const token = await mintCredential({
        secret: `${secret}-other`,
        sub: "w",
        scopes: ["pinboard:worker"],
        pinboard: claim,
      });
      expect(await rejection(passport.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for an unsigned alg=none token", async () => {
      const part = (v: object) => Buffer.from(JSON.stringify(v)).toString("base64url");
      const payload = { sub: "w", scopes: ["pinboard:worker"], pinboard: claim, exp: nowS() + 3600 };
      const none = `${part({ alg: "none", typ: "JWT" })}.${part(payload)}.`;
      expect(await rejection(passport.authenticate(bearer(none), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for HS512 signed with the same secret", async () => {
      const token = await sign({ sub: "w", scopes: ["pinboard:worker"], pinboard: claim }, "HS512");
      expect(await rejection(passport.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for a credential without sub or with a non-string account", async () => {
      const noSub = await sign({ scopes: ["pinboard:worker"], pinboard: claim });
      expect(await rejection(passport.authenticate(bearer(noSub), "pinboard:worker"))).toEqual(UNAUTHORIZED);
      const badAccount = await sign({ sub: "w", account: 7, scopes: ["pinboard:worker"], pinboard: claim });
      expect(await rejection(passport.authenticate(bearer(badAccount), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("for issuer or audience mismatch when they are configured", async () => {
      const strict = createPassport({ secret, issuer: "https://idp", audience: "pinboard" });
      const mint = (issuer?: string, audience?: string) =>
        mintCredential({ secret, sub: "w", scopes: ["pinboard:worker"], pinboard: claim, issuer, audience });
      await expect(
        strict.authenticate(bearer(await mint("https://idp", "pinboard")), "pinboard:worker"),
      ).resolves.toBeDefined();
      for (const token of [await mint("https://other", "pinboard"), await mint("https://idp", "other"), await mint()]) {
        expect(await rejection(strict.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
      }
    });
  });

  describe("403", () => {
    it("for a credential without the route's scope", async () => {
      const worker = await mintCredential({ secret, sub: "w", scopes: ["pinboard:worker"], pinboard: claim });
      expect(await rejection(passport.authenticate(bearer(worker), "pinboard:operator"))).toEqual(FORBIDDEN);
      const none = await sign({ sub: "w", pinboard: claim });
      expect(await rejection(passport.authenticate(bearer(none), "pinboard:worker"))).toEqual(FORBIDDEN);
      const prefix = await sign({ sub: "w", scope: "pinboard:workers", pinboard: claim });
      expect(await rejection(passport.authenticate(bearer(prefix), "pinboard:worker"))).toEqual(FORBIDDEN);
    });

    it.each([
      ["missing", undefined],
      ["a string", "/threads"],
      ["empty namespaces", { namespaces: [], allowedBackendHosts: ["*"] }],
      ["namespaces not an array", { namespaces: "/threads", allowedBackendHosts: ["*"] }],
      ["a namespace without slash", { namespaces: ["threads"], allowedBackendHosts: ["*"] }],
      ["a port out of range", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [70000] }],
      ["a non-integer port", { namespaces: ["*"], allowedBackendHosts: ["*"], allowedPorts: [80.5] }],
      ["hostnames of numbers", { namespaces: ["*"], allowedBackendHosts: ["*"], hostnames: [1] }],
      ["envs not an array", { namespaces: ["*"], allowedBackendHosts: ["*"], envs: "prod" }],
    ])("for a pinboard claim that is %s", async (_name, pinboard) => {
      const token = await sign({ sub: "w", scopes: ["pinboard:worker"], pinboard });
      expect(await rejection(passport.authenticate(bearer(token), "pinboard:worker"))).toEqual(FORBIDDEN);
    });
  });
});

describe("createPassport", () => {
  it("refuses to build without a key", () => {
    expect(() => createPassport({})).toThrow(/no passport key configured/);
  });
  it("refuses both a secret and a JWKS, and a JWKS that is neither a URL nor a key set", () => {
    expect(() => createPassport({ secret, jwks: '{"keys":[]}' })).toThrow(/not both/);
    expect(() => createPassport({ jwks: "not json" })).toThrow(/neither an http\(s\) URL nor JSON/);
    expect(() => createPassport({ jwks: '{"kty":"oct"}' })).toThrow(/not a JSON Web Key Set/);
  });
});

describe("JWKS passport", () => {
  let privateKey: CryptoKey;
  let jwks: { keys: object[] };

  beforeAll(async () => {
    const pair = await generateKeyPair("ES256");
    privateKey = pair.privateKey;
    jwks = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: "k1", alg: "ES256", use: "sig" }] };
  });

  const es256 = (payload: JWTPayload, opts: { issuer?: string; audience?: string; kid?: string } = {}) => {
    const jwt = new SignJWT(payload)
      .setProtectedHeader({ alg: "ES256", kid: opts.kid ?? "k1" })
      .setIssuedAt()
      .setExpirationTime("5m");
    if (opts.issuer) jwt.setIssuer(opts.issuer);
    if (opts.audience) jwt.setAudience(opts.audience);
    return jwt.sign(privateKey);
  };
  const payload = { sub: "w", scopes: ["pinboard:worker"], pinboard: claim };

  it("verifies with an inline key set, checking issuer and audience", async () => {
    const inline = createPassport({ jwks: JSON.stringify(jwks), issuer: "https://idp", audience: "pinboard" });
    const good = await es256(payload, { issuer: "https://idp", audience: "pinboard" });
    expect(await inline.authenticate(bearer(good), "pinboard:worker")).toMatchObject({ sub: "w" });

    for (const token of [
      await es256(payload, { issuer: "https://evil", audience: "pinboard" }),
      await es256(payload, { issuer: "https://idp", audience: "other" }),
      await es256(payload, { issuer: "https://idp", audience: "pinboard", kid: "unknown" }),
      await sign(payload), // HS256: a JWKS passport never takes symmetric algorithms
    ]) {
      expect(await rejection(inline.authenticate(bearer(token), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    }
  });

  it("verifies an RS256 key from an inline set", async () => {
    const pair = await generateKeyPair("RS256");
    const set = { keys: [{ ...(await exportJWK(pair.publicKey)), kid: "r1" }] };
    const token = await new SignJWT(payload).setProtectedHeader({ alg: "RS256", kid: "r1" }).sign(pair.privateKey);
    const inline = createPassport({ jwks: JSON.stringify(set) });
    expect(await inline.authenticate(bearer(token), "pinboard:worker")).toMatchObject({ sub: "w" });
  });

  describe("served over HTTP", () => {
    let server: Server;
    let url: string;
    let requests = 0;
    let failing = false;

    beforeAll(async () => {
      server = createServer((req, res) => {
        requests++;
        if (failing || req.url !== "/.well-known/jwks.json") {
          res.writeHead(failing ? 500 : 404).end();
          return;
        }
        res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(jwks));
      });
      await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

    it("fetches the key set once and caches it", async () => {
      requests = 0;
      const remote = createPassport({ jwks: `${url}/.well-known/jwks.json` });
      const token = await es256(payload);
      expect(await remote.authenticate(bearer(token), "pinboard:worker")).toMatchObject({ sub: "w" });
      expect(await remote.authenticate(bearer(token), "pinboard:worker")).toMatchObject({ sub: "w" });
      expect(requests).toBe(1);
      const forged = await sign(payload);
      expect(await rejection(remote.authenticate(bearer(forged), "pinboard:worker"))).toEqual(UNAUTHORIZED);
    });

    it("uses the injected fetch", async () => {
      const seen: string[] = [];
      const remote = createPassport(
        { jwks: `${url}/.well-known/jwks.json` },
        {
          fetch: (input, init) => {
            seen.push(String(input));
            return fetch(input, init);
          },
        },
      );
      await remote.authenticate(bearer(await es256(payload)), "pinboard:worker");
      expect(seen).toEqual([`${url}/.well-known/jwks.json`]);
    });

    it("reports an unreachable key set as a server fault, not a 401", async () => {
      failing = true;
      try {
        const remote = createPassport({ jwks: `${url}/.well-known/jwks.json` });
        const err = await remote.authenticate(bearer(await es256(payload)), "pinboard:worker").catch((e) => e);
        expect(err).toBeInstanceOf(KeySourceUnavailable);
        expect(err).not.toBeInstanceOf(PinboardError);
      } finally {
        failing = false;
      }
    });
  });
});
