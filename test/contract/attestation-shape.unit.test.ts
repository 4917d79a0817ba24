import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { verifyAttestation } from "../../src/contract/attestation.ts";

/**
 * Tokens whose signature is right (made here with the worker's secret, byte for byte as given)
 * but whose header or claims are not an attestation's: every one is refused. Only the signature
 * proves the signer; what it signed must still have the contract's shape.
 */

const secret = "worker-secret-worker-secret-0001";
const now = 1_800_000_000;
const HEADER = '{"alg":"HS256","typ":"pinboard+jwt"}';
const CLAIMS = `"aud":"sess-1","iat":${now},"exp":${now + 30}`;

const part = (raw: string | Buffer) => Buffer.from(raw).toString("base64url");

/** A token over these exact header and payload bytes, signed with `secret`. */
function signedRaw(header: string | Buffer, payload: string | Buffer): string {
  const input = `${part(header)}.${part(payload)}`;
  return `${input}.${createHmac("sha256", secret).update(input).digest("base64url")}`;
}

const verify = (token: string) => verifyAttestation(token, secret, "sess-1", now);

describe("a token signed with the worker's secret", () => {
  it("is accepted with the contract's header and claims, and only those claims come back", async () => {
    expect(await verify(signedRaw(HEADER, `{${CLAIMS}}`))).toStrictEqual({ aud: "sess-1", iat: now, exp: now + 30 });
    expect(await verify(signedRaw(HEADER, `{${CLAIMS},"epoch":"10","depth":0,"acct":{}}`))).toStrictEqual({
      aud: "sess-1",
      iat: now,
      exp: now + 30,
      epoch: "10",
      depth: 0,
      acct: {},
    });
  });

  it.each([
    ["a header that is not JSON", "alg=HS256"],
    ["a header that is a JSON array", "[]"],
    ["a header that is JSON null", "null"],
    ["a header that is a JSON string", '"HS256"'],
    ["a header with crit", '{"alg":"HS256","typ":"pinboard+jwt","crit":["exp"]}'],
    ["a header with b64", '{"alg":"HS256","typ":"pinboard+jwt","b64":false}'],
    ["a header without typ", '{"alg":"HS256"}'],
    ["a header naming another alg", '{"alg":"none","typ":"pinboard+jwt"}'],
  ])("is refused with %s", async (_what, header) => {
    expect(await verify(signedRaw(header, `{${CLAIMS}}`))).toBeNull();
  });

  it.each([
    ["a payload that is not JSON", "aud=sess-1"],
    ["a payload that is a JSON array", `[{${CLAIMS}}]`],
    ["a payload that is JSON null", "null"],
    ["a payload that is a number", "1"],
    ["a numeric aud", `{"aud":1,"iat":${now},"exp":${now + 30}}`],
    ["no aud", `{"iat":${now},"exp":${now + 30}}`],
    ["a string iat", `{"aud":"sess-1","iat":"${now}","exp":${now + 30}}`],
    ["no exp", `{"aud":"sess-1","iat":${now}}`],
    ["an exp that parses to Infinity", `{"aud":"sess-1","iat":${now},"exp":1e400}`],
    ["an epoch that does not start with a digit", `{${CLAIMS},"epoch":"a7"}`],
    ["an epoch with a sign", `{${CLAIMS},"epoch":"-7"}`],
    ["a numeric caller", `{${CLAIMS},"caller":1}`],
    ["a negative depth", `{${CLAIMS},"depth":-1}`],
    ["a fractional depth", `{${CLAIMS},"depth":1.5}`],
    ["a string depth", `{${CLAIMS},"depth":"1"}`],
    ["a null acct", `{${CLAIMS},"acct":null}`],
    ["an array acct", `{${CLAIMS},"acct":[]}`],
    ["a string acct", `{${CLAIMS},"acct":"user"}`],
  ])("is refused with %s", async (_what, payload) => {
    expect(await verify(signedRaw(HEADER, payload))).toBeNull();
  });

  it("is refused when its payload is not UTF-8", async () => {
    const payload = Buffer.concat([Buffer.from(`{${CLAIMS},"caller":"`), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]);
    expect(await verify(signedRaw(HEADER, payload))).toBeNull();
  });

  it("is refused with a fourth part, or with its parts rejoined differently", async () => {
    const token = signedRaw(HEADER, `{${CLAIMS}}`);
    expect(await verify(`${token}.`)).toBeNull();
    expect(await verify(`${token}.${token.split(".")[2]}`)).toBeNull();
    expect(await verify(token.replace(".", ".."))).toBeNull();
  });
});
