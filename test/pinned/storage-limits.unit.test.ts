import { describe, expect, it } from "vitest";
import {
  checkKey,
  checkKeyCount,
  checkKeys,
  checkListOptions,
  MAX_KEY_BYTES,
  MAX_KEYS_PER_CALL,
  MAX_KEYS_PER_TRANSACTION,
  MAX_VALUE_BYTES,
  serialiseEntries,
  serialiseValue,
} from "../../src/pinned/storage-limits.ts";

/**
 * ctx.storage's limits at their boundaries, each refusal's kind and words (storage-limits.test.ts
 * holds that a refused call changes nothing in either store).
 */

const refusal = (kind: ErrorConstructor, message: string) => expect.objectContaining({ name: kind.name, message });

describe("storage limits", () => {
  it("are Durable Objects' figures", () => {
    expect([MAX_KEYS_PER_CALL, MAX_KEYS_PER_TRANSACTION, MAX_KEY_BYTES, MAX_VALUE_BYTES]).toEqual([
      128, 128, 2048, 1048576,
    ]);
  });

  it("take 128 keys in one call, not 129", () => {
    expect(() => checkKeyCount("storage.get", 128)).not.toThrow();
    expect(() => checkKeyCount("storage.get", 129)).toThrow(
      new RangeError("storage.get: 129 keys in one call; at most 128 keys per call"),
    );
    expect(() =>
      checkKeys(
        "storage.delete",
        Array.from({ length: 129 }, (_, i) => `k${i}`),
      ),
    ).toThrow("storage.delete: 129 keys in one call; at most 128 keys per call");
    expect(checkKeys("storage.get", ["a", "b"])).toEqual(["a", "b"]);
  });

  it("take a key of 1 to 2048 UTF-8 bytes, and only a string", () => {
    expect(() => checkKey("storage.get", "k")).not.toThrow();
    expect(() => checkKey("storage.get", "x".repeat(2048))).not.toThrow();
    expect(() => checkKey("storage.get", "x".repeat(2049))).toThrow(
      new RangeError("storage.get: key is 2049 bytes; keys are at most 2048 bytes (UTF-8)"),
    );
    // 683 three-byte characters: 683 UTF-16 units but 2049 bytes.
    expect(() => checkKey("storage.put", "€".repeat(683))).toThrow("storage.put: key is 2049 bytes;");
    expect(() => checkKey("storage.get", "")).toThrow(
      new RangeError("storage.get: key is empty; keys are 1 to 2048 bytes (UTF-8)"),
    );
    for (const [key, described] of [
      [null, "null"],
      [undefined, "undefined"],
      [1, "a number"],
      [{}, "an object"],
      [true, "a boolean"],
      [Symbol("s"), "a symbol"],
    ] as const) {
      let thrown: unknown;
      try {
        checkKey("storage.get", key);
      } catch (err) {
        thrown = err;
      }
      expect(thrown).toEqual(refusal(TypeError, `storage.get: key is ${described}; keys are strings`));
      expect(thrown).toBeInstanceOf(TypeError);
    }
    expect(() => checkKeys("storage.get", ["a", 2])).toThrow("storage.get: key is a number; keys are strings");
  });

  it("take a value whose JSON text is at most 1 MiB of UTF-8", () => {
    expect(serialiseValue("storage.put", "k", { a: [1, "b"] })).toBe('{"a":[1,"b"]}');
    const fits = "x".repeat(MAX_VALUE_BYTES - 2); // with its quotes, exactly 1 MiB
    expect(serialiseValue("storage.put", "k", fits)).toBe(JSON.stringify(fits));
    expect(() => serialiseValue("storage.put", "k", `${fits}x`)).toThrow(
      new RangeError('storage.put("k"): value is 1048577 bytes as JSON; values are at most 1048576 bytes (1 MiB)'),
    );
    // Fewer UTF-16 units than the limit, more bytes: counted in UTF-8.
    const wide = "€".repeat(Math.ceil(MAX_VALUE_BYTES / 3));
    expect(() => serialiseValue("transaction.put", "k", wide)).toThrow(
      'transaction.put("k"): value is 1048580 bytes as JSON',
    );
    // Just under a third of the limit in units is taken without counting bytes; near it, counted.
    const third = "€".repeat(Math.floor(MAX_VALUE_BYTES / 3) - 2);
    expect(serialiseValue("storage.put", "k", third)).toBe(JSON.stringify(third));
    expect(() => serialiseValue("storage.put", "k", () => 1)).toThrow(
      new TypeError('storage.put("k"): the value is not JSON-serialisable'),
    );
    expect(() => serialiseValue("storage.put", "k", undefined)).toThrow(TypeError);
  });

  it("name a long key in a message by its first 40 characters", () => {
    const key = "k".repeat(41);
    expect(() => serialiseValue("storage.put", key, undefined)).toThrow(
      `storage.put("${"k".repeat(40)}…"): the value is not JSON-serialisable`,
    );
    const forty = "k".repeat(40);
    expect(() => serialiseValue("storage.put", forty, undefined)).toThrow(
      `storage.put("${forty}"): the value is not JSON-serialisable`,
    );
  });

  it("serialise a put of one key and value, or of a record of entries", () => {
    expect(serialiseEntries("storage.put", "a", 1)).toEqual([["a", "1"]]);
    expect(serialiseEntries("storage.put", { a: 1, b: "x" }, undefined)).toEqual([
      ["a", "1"],
      ["b", '"x"'],
    ]);
    expect(() => serialiseEntries("storage.put", "", 1)).toThrow("storage.put: key is empty");
    expect(() => serialiseEntries("storage.put", "a", undefined)).toThrow(
      'storage.put("a"): the value is not JSON-serialisable',
    );
    expect(() => serialiseEntries("storage.put", { "": 1 }, undefined)).toThrow("storage.put: key is empty");
    expect(() => serialiseEntries("storage.put", { a: undefined }, undefined)).toThrow(
      'storage.put("a"): the value is not JSON-serialisable',
    );
    const record = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, i]));
    expect(serialiseEntries("storage.put", record(128), undefined)).toHaveLength(128);
    expect(() => serialiseEntries("storage.put", record(129), undefined)).toThrow(
      "storage.put: 129 keys in one call; at most 128 keys per call",
    );
    for (const [first, described] of [
      [null, "null"],
      [undefined, "undefined"],
      [[["a", 1]], "an object"],
      [7, "a number"],
    ] as const) {
      expect(() => serialiseEntries("storage.put", first, 1)).toThrow(
        new TypeError(
          `storage.put: the first argument is ${described}; pass a key and a value, or a record of entries`,
        ),
      );
    }
  });

  it("take a list limit that is a non-negative integer, or none", () => {
    for (const options of [undefined, {}, { limit: 0 }, { limit: 5 }])
      expect(() => checkListOptions("storage.list", options)).not.toThrow();
    for (const limit of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY])
      expect(() => checkListOptions("storage.list", { limit })).toThrow(
        new RangeError(`storage.list: limit is ${String(limit)}; limit must be a non-negative integer`),
      );
  });
});
