import { describe, expect, it } from "vitest";
import {
  isId,
  isLabel,
  isNamespace,
  isReservedNamespace,
  isWorkerNamespace,
  RESERVED_NAMESPACES,
} from "../../src/contract/names.ts";

/**
 * The name rules Pinboard and the worker library share: a namespace is "/" plus one segment of
 * 1–128 unreserved URL characters and never a dot segment; an id is 1–256 of the same characters;
 * hostnames and envs are labels of 1–253 characters without `*`, whitespace, `/` or `:`.
 */

const UNRESERVED = "ABCXYZabcxyz0189._~-";

describe("isNamespace", () => {
  it("takes / plus one segment of 1 to 128 unreserved characters", () => {
    for (const ns of ["/a", `/${UNRESERVED}`, `/${"n".repeat(128)}`, "/...", "/.a", "/~"]) {
      expect(isNamespace(ns)).toBe(true);
    }
  });

  it("refuses dot segments, a missing or doubled slash, other characters and 129 characters", () => {
    for (const ns of [
      "/.",
      "/..",
      "/",
      "",
      "a",
      "a/b",
      "//a",
      "/a/b",
      "/a ",
      "/a%2F",
      "/a:b",
      "/ü",
      `/${"n".repeat(129)}`,
    ]) {
      expect(isNamespace(ns)).toBe(false);
    }
  });
});

describe("isId", () => {
  it("takes 1 to 256 unreserved characters, dots alone included", () => {
    for (const id of ["a", UNRESERVED, "i".repeat(256), ".", "..", "~"]) expect(isId(id)).toBe(true);
  });

  it("refuses the empty id, 257 characters, a slash and other characters", () => {
    for (const id of ["", "i".repeat(257), "a/b", "a b", "a%20", "a+b", "a@b", "ü", "a\n"]) {
      expect(isId(id)).toBe(false);
    }
  });
});

describe("isLabel", () => {
  it("takes 1 to 253 characters without *, whitespace, / or :", () => {
    for (const label of ["prod", "api.example.com", "x".repeat(253), "a-b_c~d"]) {
      expect(isLabel(label)).toBe(true);
    }
  });

  it("refuses the empty label, 254 characters and each forbidden character", () => {
    for (const label of ["", "x".repeat(254), "*", "a*", "a b", "a\tb", "a\nb", "a/b", "host:8080"]) {
      expect(isLabel(label)).toBe(false);
    }
  });
});

describe("reserved namespaces", () => {
  it("are Pinboard's and the worker's own first path segments, exactly", () => {
    expect([...RESERVED_NAMESPACES].sort()).toEqual([
      "/_pinned",
      "/console",
      "/healthz",
      "/metrics",
      "/openapi.json",
      "/readyz",
      "/registry",
    ]);
  });

  it("are matched exactly, and a worker may serve any other well-formed namespace", () => {
    for (const ns of RESERVED_NAMESPACES) {
      expect(isNamespace(ns)).toBe(true);
      expect(isReservedNamespace(ns)).toBe(true);
      expect(isWorkerNamespace(ns)).toBe(false);
    }
    for (const ns of ["/Registry", "/registry2", "/console.x", "/healthz-", "/threads"]) {
      expect(isReservedNamespace(ns)).toBe(false);
      expect(isWorkerNamespace(ns)).toBe(true);
    }
    expect(isWorkerNamespace("/..")).toBe(false);
  });
});
