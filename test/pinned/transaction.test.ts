import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type DurabilityStore,
  type InstanceRef,
  type ListOptions,
  RedisDurabilityStore,
  StaleEpochError,
  type Transaction,
} from "../../src/pinned/index.ts";
import { counted, freshRef, stateOf, storageOn, storeKinds } from "../support/instance-storage.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

let redis: TestRedis;
beforeAll(async () => {
  redis = await startTestRedis();
});
afterAll(() => redis?.stop());

/** On Redis: the data hash's fields and the key index's members, which must always agree. */
async function rawKeys(store: DurabilityStore, ref: InstanceRef): Promise<{ data: string[]; index: string[] } | null> {
  if (!(store instanceof RedisDurabilityStore)) return null;
  const data = await store.client.hkeys(store.keys.data(ref.ns, ref.id));
  const index = await store.client.zrange(store.keys.keys(ref.ns, ref.id), "0", "-1");
  return { data: data.sort(), index: index.sort() };
}

describe.each(storeKinds(() => redis))("storage.transaction on %s", (_name, make) => {
  let store: DurabilityStore;
  beforeAll(() => {
    store = make();
  });
  afterAll(() => store.close?.());

  async function seeded(entries: Record<string, unknown>) {
    const ref = freshRef();
    await store.activate(ref, "5");
    const { storage } = storageOn(store, ref, "5");
    if (Object.keys(entries).length) await storage.put(entries);
    return { ref, ...storageOn(store, ref, "5") };
  }

  it("writes every buffered put and delete in one commit, and resolves with the closure's value", async () => {
    const ref = freshRef();
    await store.activate(ref, "5");
    await storageOn(store, ref, "5").storage.put({ old: 1, gone: 2 });
    const { store: spy, calls } = counted(store);
    const { storage } = storageOn(spy, ref, "5");
    const result = await storage.transaction(async (txn) => {
      await txn.put("a", { n: 1 });
      await txn.put({ b: [2], c: "three" });
      await txn.delete("gone");
      expect(await stateOf(store, ref)).toMatchObject({
        entries: [
          ["gone", "2"],
          ["old", "1"],
        ],
      });
      return "done";
    });
    expect(result).toBe("done");
    // Each read is fenced: the stored epoch is read beside the values.
    expect(Object.fromEntries(calls)).toEqual({ get: 1, epochOf: 1, commit: 1 });
    expect(await stateOf(store, ref)).toEqual({
      epoch: "5",
      alarm: null,
      entries: [
        ["a", '{"n":1}'],
        ["b", "[2]"],
        ["c", '"three"'],
        ["old", "1"],
      ],
    });
    expect(await rawKeys(store, ref)).toEqual(
      store instanceof RedisDurabilityStore ? { data: ["a", "b", "c", "old"], index: ["a", "b", "c", "old"] } : null,
    );
  });

  it("writes nothing when the closure throws after its writes, and rejects with that very error", async () => {
    const { ref, storage } = await seeded({ a: 1, b: 2 });
    const before = await stateOf(store, ref);
    const thrown = new Error("changed my mind");
    const err = await storage
      .transaction(async (txn) => {
        await txn.put({ a: 10, c: 30 });
        await txn.delete("b");
        throw thrown;
      })
      .catch((e: unknown) => e);
    expect(err).toBe(thrown);
    expect(await stateOf(store, ref)).toEqual(before);
    expect(await rawKeys(store, ref)).toEqual(
      store instanceof RedisDurabilityStore ? { data: ["a", "b"], index: ["a", "b"] } : null,
    );
  });

  it("reads its own writes: get of one key and of many, over the committed state", async () => {
    const { storage } = await seeded({ a: 1, b: 2, c: 3 });
    await storage.transaction(async (txn) => {
      await txn.put("a", 10);
      await txn.delete("b");
      await txn.put("d", { x: 4 });
      expect(await txn.get("a")).toBe(10);
      expect(await txn.get("b")).toBeUndefined();
      expect(await txn.get("c")).toBe(3);
      expect(await txn.get("d")).toEqual({ x: 4 });
      expect(await txn.get("none")).toBeUndefined();
      expect(await txn.get(["a", "b", "c", "d", "none", "a"])).toEqual(
        new Map<string, unknown>([
          ["a", 10],
          ["c", 3],
          ["d", { x: 4 }],
        ]),
      );
      // Outside the transaction nothing has changed yet.
      expect(await storage.get(["a", "b", "d"])).toEqual(
        new Map([
          ["a", 1],
          ["b", 2],
        ]),
      );
    });
    expect(await storage.get(["a", "b", "c", "d"])).toEqual(
      new Map<string, unknown>([
        ["a", 10],
        ["c", 3],
        ["d", { x: 4 }],
      ]),
    );
  });

  it("gives back a copy: changing an object after txn.put changes neither the buffer nor the commit", async () => {
    const { storage } = await seeded({});
    await storage.transaction(async (txn) => {
      const value = { n: 1 };
      await txn.put("k", value);
      value.n = 2;
      const read = await txn.get<{ n: number }>("k");
      read!.n = 3;
      expect(await txn.get("k")).toEqual({ n: 1 });
    });
    expect(await storage.get("k")).toEqual({ n: 1 });
  });

  it("answers delete with what existed as the transaction saw it", async () => {
    const { storage } = await seeded({ a: 1, b: 2 });
    await storage.transaction(async (txn) => {
      expect(await txn.delete("a")).toBe(true);
      expect(await txn.delete("a")).toBe(false);
      await txn.put("new", 1);
      expect(await txn.delete(["new", "b", "none", "b"])).toBe(2);
      expect(await txn.delete("none")).toBe(false);
    });
    expect(await storage.list()).toEqual(new Map());
  });

  it("orders writes of one key: put then delete leaves it absent, delete then put present", async () => {
    const { ref, storage } = await seeded({ p: "old", q: "old" });
    await storage.transaction(async (txn) => {
      await txn.put("p", "new");
      await txn.delete("p");
      await txn.delete("q");
      await txn.put("q", "new");
      await txn.put("r", 1);
      await txn.put("r", 2);
    });
    expect(await store.get(ref, ["p", "q", "r"])).toEqual([null, '"new"', "2"]);
    expect(await rawKeys(store, ref)).toEqual(
      store instanceof RedisDurabilityStore ? { data: ["q", "r"], index: ["q", "r"] } : null,
    );
  });

  it("applies calls the closure did not await, in call order", async () => {
    const { ref, storage } = await seeded({ a: 1 });
    await storage.transaction(async (txn) => {
      void txn.put("a", 2);
      void txn.delete("a");
      void txn.put("b", 1);
      void txn.delete("b");
      void txn.put("b", 3);
    });
    expect(await store.get(ref, ["a", "b"])).toEqual([null, "3"]);
  });

  it("keeps the data hash and the key index in step when a commit deletes every key", async () => {
    const { ref, storage } = await seeded({ a: 1, b: 2 });
    await storage.transaction(async (txn) => {
      await txn.delete(["a", "b"]);
      await txn.put("c", 3);
      await txn.delete("c");
    });
    expect(await stateOf(store, ref)).toEqual({ epoch: "5", alarm: null, entries: [] });
    if (store instanceof RedisDurabilityStore) {
      const c = store.client;
      expect(await c.exists(store.keys.data(ref.ns, ref.id), store.keys.keys(ref.ns, ref.id))).toBe(0);
      expect(await c.hgetall(store.keys.meta(ref.ns, ref.id))).toEqual({ epoch: "5" });
    }
  });

  it("rollback(): nothing is written, transaction() resolves with the closure's value, later calls throw", async () => {
    const { ref, storage } = await seeded({ a: 1 });
    const before = await stateOf(store, ref);
    const { store: spy, calls } = counted(store);
    const result = await storageOn(spy, ref, "5").storage.transaction(async (txn) => {
      await txn.put("a", 2);
      await txn.put("b", 2);
      txn.rollback();
      txn.rollback(); // a second rollback is harmless
      await expect(txn.get("a")).rejects.toThrow(
        new Error("transaction.get: the transaction was rolled back; nothing of it is written, start another"),
      );
      await expect(txn.put("c", 1)).rejects.toThrow(
        "transaction.put: the transaction was rolled back; nothing of it is written, start another",
      );
      return 42;
    });
    expect(result).toBe(42);
    expect(calls.get("commit")).toBeUndefined();
    expect(await stateOf(store, ref)).toEqual(before);
    expect(await storage.get("a")).toBe(1);

    const thrown = new Error("after rollback");
    await expect(
      storage.transaction(async (txn) => {
        await txn.put("a", 3);
        txn.rollback();
        throw thrown;
      }),
    ).rejects.toBe(thrown);
    expect(await stateOf(store, ref)).toEqual(before);
  });

  it("refuses calls on a transaction whose closure has settled, and writes nothing more", async () => {
    const { ref, storage } = await seeded({});
    let kept: Transaction | undefined;
    await storage.transaction(async (txn) => {
      kept = txn;
      await txn.put("in", 1);
    });
    await expect(kept!.put("late", 1)).rejects.toThrow(
      "transaction.put: the transaction has ended (its closure settled); use ctx.storage or a new transaction",
    );
    expect(() => kept!.rollback()).toThrow(
      "transaction.rollback: the transaction has ended (its closure settled); use ctx.storage or a new transaction",
    );
    expect(await store.list(ref)).toEqual([["in", "1"]]);
  });

  it("makes no store call for a transaction that only reads", async () => {
    const { ref } = await seeded({ a: 1 });
    const { store: spy, calls } = counted(store);
    const value = await storageOn(spy, ref, "5").storage.transaction(async (txn) => txn.get("a"));
    expect(value).toBe(1);
    expect(Object.fromEntries(calls)).toEqual({ get: 1, epochOf: 1 });
  });

  it("fences the commit: at a stale epoch it changes nothing, rejects with StaleEpochError and calls onStale", async () => {
    const { ref } = await seeded({ a: 1 });
    const { storage, stale } = storageOn(store, ref, "5");
    await store.activate(ref, "6"); // a newer owner claimed the instance
    const before = await stateOf(store, ref);
    const err = await storage
      .transaction(async (txn) => {
        await txn.put({ a: 2, b: 2 });
        await txn.delete("a");
        return "never seen";
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(StaleEpochError);
    expect((err as Error).message).toBe("stale placement epoch 5: the instance is held at epoch 6");
    expect(stale).toEqual([err]);
    expect(await stateOf(store, ref)).toEqual(before);
    expect(before).toEqual({ epoch: "6", alarm: null, entries: [["a", "1"]] });
  });

  it("raises the stored epoch when it commits at a higher one, like any fenced write", async () => {
    const { ref } = await seeded({});
    await storageOn(store, ref, "9").storage.transaction(async (txn) => txn.put("k", 1));
    expect(await store.epochOf(ref)).toBe("9");
    await expect(storageOn(store, ref, "5").storage.transaction(async (txn) => txn.put("k", 2))).rejects.toThrow(
      "stale placement epoch 5: the instance is held at epoch 9",
    );
  });
});

describe.each(storeKinds(() => redis))("transaction list merges its writes on %s", (_name, make) => {
  let store: DurabilityStore;
  let ref: InstanceRef;
  beforeAll(async () => {
    store = make();
  });
  afterAll(() => store.close?.());

  const committed = { a: 1, "user:1": 1, "user:2": 2, "user:3": 3, "user:4": 4, users: 0, z: 26 };
  /** The transaction's writes: a delete and an overwrite inside the prefix, new keys in and out of it. */
  async function write(txn: Transaction) {
    await txn.delete(["user:1", "user:3", "z"]);
    await txn.put({ "user:2": 20, "user:25": 25, "user:0": 0, b: 2, "user:5": 5 });
    await txn.delete("user:5");
  }

  const cases: ListOptions[] = [
    {},
    { prefix: "user:" },
    { prefix: "user:", limit: 2 },
    { prefix: "user:", limit: 3, reverse: true },
    { start: "user:1", end: "user:4" },
    { start: "user:2", limit: 1 },
    { end: "user:25", reverse: true, limit: 2 },
    { limit: 0 },
    { limit: 1 },
    { prefix: "user:", start: "user:25" },
    { prefix: "nothing" },
  ];

  it.each(cases)("txn.list(%o) inside equals storage.list after the commit", async (options) => {
    ref = freshRef();
    await store.activate(ref, "1");
    const { storage } = storageOn(store, ref, "1");
    await storage.put(committed);
    let inside: Map<string, unknown> | undefined;
    await storage.transaction(async (txn) => {
      await write(txn);
      inside = await txn.list(options);
    });
    expect([...inside!]).toEqual([...(await storage.list(options))]);
  });

  it("lists exactly these entries (the oracle above checked by hand)", async () => {
    ref = freshRef();
    await store.activate(ref, "1");
    const { storage } = storageOn(store, ref, "1");
    await storage.put(committed);
    await storage.transaction(async (txn) => {
      await write(txn);
      expect([...(await txn.list({ prefix: "user:" }))]).toEqual([
        ["user:0", 0],
        ["user:2", 20],
        ["user:25", 25],
        ["user:4", 4],
      ]);
      expect([...(await txn.list({ prefix: "user:", limit: 2, reverse: true }))]).toEqual([
        ["user:4", 4],
        ["user:25", 25],
      ]);
      expect([...(await txn.list({ limit: 3 }))]).toEqual([
        ["a", 1],
        ["b", 2],
        ["user:0", 0],
      ]);
      await txn.delete(["a", "b", "user:0", "user:2", "user:25"]);
      expect([...(await txn.list({ limit: 1 }))]).toEqual([["user:4", 4]]);
    });
  });
});
