import fc from "fast-check";
import { afterAll, beforeAll, expect, it } from "vitest";
import { applyListOptions } from "../../src/pinned/durability.ts";
import {
  type DurabilityStore,
  type ListOptions,
  MemoryDurabilityStore,
  type Transaction,
} from "../../src/pinned/index.ts";
import { durableStore } from "../support/durability.ts";
import { freshRef, storageOn } from "../support/instance-storage.ts";
import { startTestRedis, type TestRedis } from "../support/redis.ts";

/**
 * Random transactions, run alike on the memory store and on Redis: every answer inside the
 * transaction equals a model (the committed entries with the transaction's writes applied in
 * order), and the two stores end with the same entries: the model's after a commit, the seed's
 * after a throw or a rollback.
 */

let redis: TestRedis, memory: DurabilityStore, onRedis: DurabilityStore;
beforeAll(async () => {
  redis = await startTestRedis();
  memory = new MemoryDurabilityStore();
  onRedis = durableStore(redis);
});
afterAll(async () => {
  await onRedis?.close?.();
  await redis?.stop();
});

const key = fc.constantFrom("a", "ab", "b", "b:1", "b:10", "b:2", "é", "z", "\u{1F600}");
/** Mostly absent, so that ranges are seldom empty and the limit (often small) is what cuts. */
const bound = fc.oneof(
  { arbitrary: fc.constant(undefined), weight: 3 },
  { arbitrary: fc.constantFrom("", "a", "b", "b:", "b:1", "b:2", "c", "é", "zz"), weight: 1 },
);
const value = fc.oneof(
  fc.integer(),
  fc.string({ maxLength: 4 }),
  fc.constant(null),
  fc.array(fc.integer(), { maxLength: 2 }),
);
const options: fc.Arbitrary<ListOptions> = fc.record(
  {
    prefix: bound,
    start: bound,
    end: bound,
    reverse: fc.boolean(),
    limit: fc.oneof(fc.constant(undefined), fc.nat(4)),
  },
  { requiredKeys: ["limit"] },
);
type Op =
  | { op: "put"; entries: [string, unknown][] }
  | { op: "delete"; keys: string[]; many: boolean }
  | { op: "get"; keys: string[]; many: boolean }
  | { op: "list"; options: ListOptions };
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({
    op: fc.constant("put" as const),
    entries: fc.array(fc.tuple(key, value), { minLength: 1, maxLength: 3 }),
  }),
  fc.record({
    op: fc.constant("delete" as const),
    keys: fc.array(key, { minLength: 1, maxLength: 3 }),
    many: fc.boolean(),
  }),
  fc.record({
    op: fc.constant("get" as const),
    keys: fc.array(key, { minLength: 1, maxLength: 3 }),
    many: fc.boolean(),
  }),
  fc.record({ op: fc.constant("list" as const), options }),
);
const ending = fc.constantFrom("commit", "throw", "rollback");

/** Runs one op on the transaction and on the model (key → JSON text); returns the answer. */
async function apply(txn: Transaction, model: Map<string, string>, o: Op): Promise<{ got: unknown; want: unknown }> {
  switch (o.op) {
    case "put": {
      // A record keeps the last value of a repeated key, in the key's first position.
      const entries = Object.entries(Object.fromEntries(o.entries));
      await txn.put(Object.fromEntries(entries));
      for (const [k, v] of entries) model.set(k, JSON.stringify(v));
      return { got: undefined, want: undefined };
    }
    case "delete": {
      const keys = o.many ? o.keys : o.keys.slice(0, 1);
      const existed = new Set(keys).size - [...new Set(keys)].filter((k) => !model.has(k)).length;
      const got = o.many ? await txn.delete(keys) : await txn.delete(keys[0]!);
      for (const k of keys) model.delete(k);
      return { got, want: o.many ? existed : existed > 0 };
    }
    case "get": {
      if (!o.many) {
        const raw = model.get(o.keys[0]!);
        return { got: await txn.get(o.keys[0]!), want: raw === undefined ? undefined : JSON.parse(raw) };
      }
      const want = new Map(o.keys.filter((k) => model.has(k)).map((k) => [k, JSON.parse(model.get(k)!)]));
      return { got: [...(await txn.get(o.keys))], want: [...want] };
    }
    case "list": {
      const want = applyListOptions([...model.entries()], o.options).map(([k, v]) => [k, JSON.parse(v)]);
      return { got: [...(await txn.list(o.options))], want };
    }
  }
}

async function run(store: DurabilityStore, seed: [string, unknown][], ops: Op[], end: string) {
  const ref = freshRef();
  await store.activate(ref, "1");
  const { storage } = storageOn(store, ref, "1");
  if (seed.length) await storage.put(Object.fromEntries(seed));
  const model = new Map((await store.list(ref)).map(([k, v]) => [k, v]));
  const committed = new Map(model);
  const thrown = new Error("abandon");
  const answers = await storage
    .transaction(async (txn) => {
      const out: { got: unknown; want: unknown }[] = [];
      for (const o of ops) out.push(await apply(txn, model, o));
      if (end === "rollback") txn.rollback();
      if (end === "throw") throw thrown;
      return out;
    })
    .catch((e: unknown) => {
      expect(e).toBe(thrown);
      return [];
    });
  for (const { got, want } of answers) expect(got).toEqual(want);
  const expected = end === "commit" ? model : committed;
  expect(await store.list(ref)).toEqual(applyListOptions([...expected.entries()]));
  return { answers, final: await store.list(ref) };
}

it("answers every transaction like the model, the same on memory and on Redis", async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.tuple(key, value), { maxLength: 6 }),
      fc.array(op, { maxLength: 12 }),
      ending,
      async (seed, ops, end) => {
        const a = await run(memory, seed, ops, end);
        const b = await run(onRedis, seed, ops, end);
        expect(b).toEqual(a);
      },
    ),
    { numRuns: 300 },
  );
});
