import { describe, expect, it } from "vitest";
import {
  DEFAULT_DURABLE_PREFIX,
  DurableKeys,
  instanceMember,
  parseInstanceMember,
} from "../../src/contract/durable-index.ts";

/**
 * The durability store's key names and index members (docs/durable-index.md): the worker library
 * writes them and Pinboard's sweeper reads them, so both must spell them exactly alike.
 */

describe("instance members", () => {
  it("are {ns}/{id}", () => {
    expect(instanceMember("/counter", "abc")).toBe("/counter/abc");
    expect(instanceMember("/a.b", "x~y")).toBe("/a.b/x~y");
  });

  it("parse back to their namespace and id", () => {
    expect(parseInstanceMember("/counter/abc")).toEqual({ ns: "/counter", id: "abc" });
    expect(parseInstanceMember("/a.b/x~y")).toEqual({ ns: "/a.b", id: "x~y" });
    expect(parseInstanceMember(`/${"n".repeat(128)}/${"i".repeat(256)}`)).toEqual({
      ns: `/${"n".repeat(128)}`,
      id: "i".repeat(256),
    });
  });

  it("that are not a worker namespace and an id parse to null", () => {
    for (const member of [
      "",
      "abc",
      "/abc",
      "counter/abc",
      "/counter/",
      "/a/b/c",
      "//abc",
      "/../abc",
      "/registry/abc",
      "/_pinned/abc",
      "/counter/a b",
      `/counter/${"i".repeat(257)}`,
    ]) {
      expect(parseInstanceMember(member)).toBeNull();
    }
  });
});

describe("DurableKeys", () => {
  it("names an instance's keys under its {ns/id} hash tag", () => {
    const keys = new DurableKeys();
    expect(DEFAULT_DURABLE_PREFIX).toBe("pinned:");
    expect([keys.meta("/counter", "abc"), keys.data("/counter", "abc"), keys.keys("/counter", "abc")]).toEqual([
      "pinned:{/counter/abc}:meta",
      "pinned:{/counter/abc}:data",
      "pinned:{/counter/abc}:keys",
    ]);
  });

  it("names the two index keys under the {pinned-index} tag", () => {
    const keys = new DurableKeys("app1:");
    expect([keys.instances, keys.alarms]).toEqual(["app1:{pinned-index}:instances", "app1:{pinned-index}:alarms"]);
    expect(new DurableKeys("").meta("/c", "i")).toBe("{/c/i}:meta");
  });

  it("refuses a prefix with braces or whitespace", () => {
    for (const prefix of ["a{", "}", "a b", "a\t", "a\n"]) {
      expect(() => new DurableKeys(prefix)).toThrow("a durable key prefix may not contain braces or whitespace");
    }
  });
});
