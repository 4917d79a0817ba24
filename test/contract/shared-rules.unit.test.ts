import { describe, expect, it } from "vitest";
import { attestationTarget, isBound } from "../../src/contract/attestation.ts";
import { constantTimeEqual } from "../../src/contract/constant-time.ts";
import {
  ATTESTATION_HEADER,
  EPOCH_HEADER,
  FROM_HEADER,
  isLeaseRefusal,
  LEASE_UNHEALTHY,
  PROXY_SECRET_HEADER,
  REFUSAL_HEADER,
  SESSION_HEADER,
  SESSION_SECRET_HEADER,
  SUBREQUEST_DEPTH_HEADER,
} from "../../src/contract/header-names.ts";
import { defineScript, evalScript, isNoScript, registeredScripts } from "../../src/contract/lua-script.ts";

/** The small shared rules of the contract: secret comparison, the refusal, request binding, the script registry. */

describe("constantTimeEqual", () => {
  it("is true for equal secrets only, whatever the lengths", async () => {
    expect(await constantTimeEqual("s3cret-s3cret-s3", "s3cret-s3cret-s3")).toBe(true);
    expect(await constantTimeEqual("", "")).toBe(true);
    expect(await constantTimeEqual("s3cret-s3cret-s3", "s3cret-s3cret-s4")).toBe(false);
    expect(await constantTimeEqual("a", "ab")).toBe(false);
    expect(await constantTimeEqual("", "a")).toBe(false);
    // Differing only in the last byte of the digest's input is still unequal (every byte counts).
    expect(await constantTimeEqual("x".repeat(1000), `${"x".repeat(999)}y`)).toBe(false);
  });
});

describe("the contract's header names", () => {
  it("are the worker contract's and the caller attestation's", () => {
    expect([ATTESTATION_HEADER, EPOCH_HEADER, PROXY_SECRET_HEADER, REFUSAL_HEADER]).toEqual([
      "Pinboard-Attestation",
      "Pinboard-Epoch",
      "Pinboard-Proxy-Secret",
      "Pinned-Refusal",
    ]);
    expect([FROM_HEADER, SESSION_HEADER, SESSION_SECRET_HEADER, SUBREQUEST_DEPTH_HEADER]).toEqual([
      "Pinboard-From",
      "Pinboard-Session",
      "Pinboard-Session-Secret",
      "Pinboard-Subrequest-Depth",
    ]);
  });
});

describe("isLeaseRefusal", () => {
  it("is 503 with Pinned-Refusal: lease-unhealthy in any case, and nothing else", () => {
    expect([REFUSAL_HEADER, LEASE_UNHEALTHY]).toEqual(["Pinned-Refusal", "lease-unhealthy"]);
    expect(isLeaseRefusal(503, "lease-unhealthy")).toBe(true);
    expect(isLeaseRefusal(503, "Lease-Unhealthy")).toBe(true);
    expect(isLeaseRefusal(502, "lease-unhealthy")).toBe(false);
    expect(isLeaseRefusal(503, "capacity")).toBe(false);
    expect(isLeaseRefusal(503, null)).toBe(false);
    expect(isLeaseRefusal(503, undefined)).toBe(false);
    expect(isLeaseRefusal(503, "")).toBe(false);
  });
});

describe("isBound and attestationTarget", () => {
  it("a token is bound when it names any of htm, htu and epoch", () => {
    const base = { aud: "s", iat: 1, exp: 31, jti: "j" };
    expect(isBound(base)).toBe(false);
    expect(isBound({ ...base, htm: "GET" })).toBe(true);
    expect(isBound({ ...base, htu: "/x" })).toBe(true);
    expect(isBound({ ...base, epoch: "3" })).toBe(true);
    expect(isBound({ ...base, htm: "GET", htu: "/x", epoch: "3" })).toBe(true);
  });

  it("the htu leaves out the advertise URL's path however many trailing slashes it has", () => {
    expect(attestationTarget("http://h:1/pre/ns/a", "http://h:1/pre//")).toBe("/ns/a");
  });
});

describe("the Lua script registry", () => {
  it("defines each name once, frozen, and lists it", () => {
    const script = defineScript("test-shared-rules-once", "return 1", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db");
    expect(script).toEqual({
      name: "test-shared-rules-once",
      script: "return 1",
      sha: "e0e1f9fabfc9d4800c877a703b823ac0578ff8db",
    });
    expect(Object.isFrozen(script)).toBe(true);
    expect(registeredScripts()).toContain(script);
    expect(() => defineScript("test-shared-rules-once", "return 2", "x")).toThrow(
      "script test-shared-rules-once is defined twice",
    );
  });

  it("tells NOSCRIPT errors, in any case, from every other failure", () => {
    expect(isNoScript(new Error("NOSCRIPT No matching script. Please use EVAL."))).toBe(true);
    expect(isNoScript(new Error("ERR noscript"))).toBe(true);
    expect(isNoScript(new Error("ERR unknown command"))).toBe(false);
    expect(isNoScript("NOSCRIPT")).toBe(false);
  });

  it("runs by SHA, falls back to the source only on NOSCRIPT, and passes other errors on", async () => {
    const script = { name: "s", script: "return 7", sha: "abc" };
    const calls: string[] = [];
    const evalsha = (fail?: Error) => async (sha: string) => {
      calls.push(`evalsha ${sha}`);
      if (fail) throw fail;
      return 1;
    };
    const evalSource = async (source: string) => {
      calls.push(`eval ${source}`);
      return 2;
    };
    expect(await evalScript(script, evalsha(), evalSource)).toBe(1);
    expect(await evalScript(script, evalsha(new Error("NOSCRIPT")), evalSource)).toBe(2);
    await expect(evalScript(script, evalsha(new Error("READONLY")), evalSource)).rejects.toThrow("READONLY");
    expect(calls).toEqual(["evalsha abc", "evalsha abc", "eval return 7", "evalsha abc"]);
  });
});
