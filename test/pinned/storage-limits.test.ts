import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DurabilityStore,
  type InstanceStorage,
  MAX_KEY_BYTES,
  MAX_KEYS_PER_CALL,
  MAX_KEYS_PER_TRANSACTION,
  MAX_VALUE_BYTES,
} from "../../src/pinned/index.ts";
import { counted, freshRef, stateOf, storageOn, storeKinds } from "../support/instance-storage.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(() => redis?.stop());

const keys = (n: number, tag = "k") => Array.from({ length: n }, (_, i) => `${tag}${i}`);
const record = (n: number) => Object.fromEntries(keys(n).map((k) => [k, 1]));

it("states the limits", () => {
  expect({ MAX_KEYS_PER_CALL, MAX_KEYS_PER_TRANSACTION, MAX_KEY_BYTES, MAX_VALUE_BYTES }).toEqual({
    MAX_KEYS_PER_CALL: 128,
    MAX_KEYS_PER_TRANSACTION: 128,
    MAX_KEY_BYTES: 2048,
    MAX_VALUE_BYTES: 1048576,
  });
});

describe.each(storeKinds(() => redis))("storage limits on %s", (_name, make) => {
  let store: DurabilityStore;
  beforeAll(() => {
    store = make();
  });
  afterAll(() => store.close?.());

  /**
   * Runs a call that must be refused: it rejects with exactly `kind` and `message`, and neither
   * the store (no method called but the reads a transaction made, its state as before) nor, on
   * Redis, any key of the server changed.
   */
  async function refused(
    call: (storage: InstanceStorage) => Promise<unknown>,
    kind: typeof RangeError | typeof TypeError,
    message: string,
    reads: Record<string, number> = {},
  ): Promise<void> {
    const ref = freshRef();
    await store.activate(ref, "3");
    await storageOn(store, ref, "3").storage.put({ a: 1, b: 2 });
    const before = { state: await stateOf(store, ref), redis: await redis.snapshot() };
    const { store: spy, calls } = counted(store);
    const err = await call(storageOn(spy, ref, "3").storage).then(
      () => new Error("the call was not refused"),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(kind);
    expect((err as Error).message).toBe(message);
    expect(Object.fromEntries(calls)).toEqual(reads);
    expect({ state: await stateOf(store, ref), redis: await redis.snapshot() }).toEqual(before);
  }

  async function accepted(call: (storage: InstanceStorage) => Promise<unknown>): Promise<unknown> {
    const ref = freshRef();
    await store.activate(ref, "3");
    return call(storageOn(store, ref, "3").storage);
  }

  it("refuses a key over 2048 UTF-8 bytes in every call, and takes one of exactly 2048", async () => {
    const long = "k".repeat(2049);
    await refused(
      (s) => s.put(long, 1),
      RangeError,
      "storage.put: key is 2049 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    await refused(
      (s) => s.put({ fine: 1, [long]: 2 }),
      RangeError,
      "storage.put: key is 2049 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    // 1025 two-byte characters: 1025 UTF-16 units, 2050 bytes.
    const wide = "é".repeat(1025);
    await refused(
      (s) => s.get(wide),
      RangeError,
      "storage.get: key is 2050 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    await refused(
      (s) => s.get(["a", wide]),
      RangeError,
      "storage.get: key is 2050 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    await refused(
      (s) => s.delete([wide]),
      RangeError,
      "storage.delete: key is 2050 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    const max = "é".repeat(1024);
    expect(
      await accepted(async (s) => {
        await s.put(max, "v");
        return s.get(max);
      }),
    ).toBe("v");
  });

  it("refuses an empty key and a key that is not a string", async () => {
    const empty = "storage.put: key is empty; keys are 1 to 2048 bytes (UTF-8)";
    await refused((s) => s.put("", 1), RangeError, empty);
    await refused((s) => s.put({ a: 9, "": 1 }), RangeError, empty);
    await refused((s) => s.get(""), RangeError, "storage.get: key is empty; keys are 1 to 2048 bytes (UTF-8)");
    await refused(
      (s) => s.delete(["a", ""]),
      RangeError,
      "storage.delete: key is empty; keys are 1 to 2048 bytes (UTF-8)",
    );
    await refused((s) => s.get([7 as unknown as string]), TypeError, "storage.get: key is a number; keys are strings");
    await refused(
      (s) => s.delete(null as unknown as string),
      TypeError,
      "storage.delete: key is null; keys are strings",
    );
    await refused(
      (s) => s.get([{}] as unknown as string[]),
      TypeError,
      "storage.get: key is an object; keys are strings",
    );
    await refused(
      (s) => s.put(undefined as unknown as string, 1),
      TypeError,
      "storage.put: the first argument is undefined; pass a key and a value, or a record of entries",
    );
  });

  it("refuses more than 128 keys in one get, put or delete, and takes 128", async () => {
    await refused((s) => s.get(keys(129)), RangeError, "storage.get: 129 keys in one call; at most 128 keys per call");
    await refused(
      (s) => s.put(record(129)),
      RangeError,
      "storage.put: 129 keys in one call; at most 128 keys per call",
    );
    await refused(
      (s) => s.delete(keys(200)),
      RangeError,
      "storage.delete: 200 keys in one call; at most 128 keys per call",
    );
    const got = await accepted(async (s) => {
      await s.put(record(128));
      return s.get(keys(128));
    });
    expect((got as Map<string, number>).size).toBe(128);
    expect(await accepted((s) => s.delete(keys(128)))).toBe(0);
  });

  it("refuses a value over 1 MiB of JSON, counted in UTF-8 bytes, and takes one of exactly 1 MiB", async () => {
    await refused(
      (s) => s.put("big", "x".repeat(MAX_VALUE_BYTES - 1)),
      RangeError,
      'storage.put("big"): value is 1048577 bytes as JSON; values are at most 1048576 bytes (1 MiB)',
    );
    // 524288 characters, 1048576 bytes, plus the quotes.
    await refused(
      (s) => s.put({ small: 1, wide: "é".repeat(MAX_VALUE_BYTES / 2) }),
      RangeError,
      'storage.put("wide"): value is 1048578 bytes as JSON; values are at most 1048576 bytes (1 MiB)',
    );
    const exact = "x".repeat(MAX_VALUE_BYTES - 2);
    expect(
      await accepted(async (s) => {
        await s.put("max", exact);
        return s.get("max");
      }),
    ).toBe(exact);
  });

  it("refuses a value JSON cannot hold and a list limit that is not a non-negative integer", async () => {
    await refused((s) => s.put("f", () => 1), TypeError, 'storage.put("f"): the value is not JSON-serialisable');
    await refused(
      (s) => s.list({ limit: -1 }),
      RangeError,
      "storage.list: limit is -1; limit must be a non-negative integer",
    );
    await refused(
      (s) => s.list({ limit: 1.5 }),
      RangeError,
      "storage.list: limit is 1.5; limit must be a non-negative integer",
    );
    await refused(
      (s) => s.list({ limit: Number.NaN }),
      RangeError,
      "storage.list: limit is NaN; limit must be a non-negative integer",
    );
    expect(await accepted((s) => s.list({ limit: 0 }))).toEqual(new Map());
  });

  it("checks the same limits inside a transaction, at the call, and nothing of the transaction is written", async () => {
    const txn = (body: Parameters<InstanceStorage["transaction"]>[0]) => (s: InstanceStorage) => s.transaction(body);
    await refused(
      txn(async (t) => {
        await t.put("ok", 1);
        await t.put("k".repeat(3000), 1);
      }),
      RangeError,
      "transaction.put: key is 3000 bytes; keys are at most 2048 bytes (UTF-8)",
    );
    await refused(
      txn(async (t) => t.get(keys(129))),
      RangeError,
      "transaction.get: 129 keys in one call; at most 128 keys per call",
    );
    await refused(
      txn(async (t) => t.list({ limit: -2 })),
      RangeError,
      "transaction.list: limit is -2; limit must be a non-negative integer",
    );
    await refused(
      txn(async (t) => t.put("big", "x".repeat(MAX_VALUE_BYTES))),
      RangeError,
      'transaction.put("big"): value is 1048578 bytes as JSON; values are at most 1048576 bytes (1 MiB)',
    );
  });

  it("refuses the write that would take a transaction past 128 keys; the closure may catch it and commit", async () => {
    await refused(
      (s) =>
        s.transaction(async (t) => {
          await t.put(record(100));
          await t.delete(keys(28, "d"));
          await t.put("k0", 2); // rewrites a key already counted
          await t.put("one-more", 1);
        }),
      RangeError,
      "transaction.put: the transaction would write 129 keys; a transaction writes at most 128 keys",
      { get: 1, epochOf: 1 }, // what the delete found, for its answer (a read, fenced)
    );
    await refused(
      (s) =>
        s.transaction(async (t) => {
          await t.put(record(128));
          await t.delete(["k1", "x"]);
        }),
      RangeError,
      "transaction.delete: the transaction would write 129 keys; a transaction writes at most 128 keys",
    );
    const ref = freshRef();
    await store.activate(ref, "3");
    const { storage } = storageOn(store, ref, "3");
    const caught = await storage.transaction(async (t) => {
      await t.put(record(128));
      // Refused whole: a record of two, one new key too many, buffers neither entry.
      return t.put({ k0: "rewritten", extra: 1 }).catch((e: Error) => e.message);
    });
    expect(caught).toBe("transaction.put: the transaction would write 129 keys; a transaction writes at most 128 keys");
    expect((await store.list(ref)).length).toBe(128);
    expect(await storage.get(["k0", "extra"])).toEqual(new Map([["k0", 1]]));
  });
});
