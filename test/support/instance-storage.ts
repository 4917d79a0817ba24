import {
  type DurabilityStore,
  type InstanceRef,
  MemoryDurabilityStore,
  type StaleEpochError,
} from "../../src/pinned/index.ts";
import { EpochStorage } from "../../src/pinned/storage.ts";
import { durableStore } from "./durability.ts";
import { onCluster, type TestRedis } from "./redis.ts";

/** The two stores ctx.storage runs on: in memory, and Redis (the test's redis-server or cluster). */
export function storeKinds(redis: () => TestRedis): [string, () => DurabilityStore][] {
  return [
    ["MemoryDurabilityStore", () => new MemoryDurabilityStore()],
    [`RedisDurabilityStore (${onCluster ? "3-primary cluster" : "single node"})`, () => durableStore(redis())],
  ];
}

let n = 0;
export const freshRef = (): InstanceRef => ({ ns: "/txn", id: `i${++n}-${Date.now()}` });

/**
 * The real store with each method's calls counted (the calls go through unchanged): proves a
 * transaction is one commit and that a refused call reached no store method at all.
 */
export function counted(store: DurabilityStore): { store: DurabilityStore; calls: Map<string, number> } {
  const calls = new Map<string, number>();
  const proxy = new Proxy(store, {
    get(target, name, receiver) {
      const value = Reflect.get(target, name, receiver);
      if (typeof value !== "function") return value;
      return (...args: unknown[]) => {
        calls.set(String(name), (calls.get(String(name)) ?? 0) + 1);
        return value.apply(target, args);
      };
    },
  });
  return { store: proxy, calls };
}

/** ctx.storage of `ref` at `epoch` over `store`, with the fenced writes its onStale hook heard. */
export function storageOn(
  store: DurabilityStore,
  ref: InstanceRef,
  epoch: string,
): { storage: EpochStorage; stale: StaleEpochError[] } {
  const stale: StaleEpochError[] = [];
  const storage = new EpochStorage(store, ref, epoch, { onStale: (err) => stale.push(err), afterDeleteAll() {} });
  return { storage, stale };
}

/** What the store holds for `ref`, read from the store itself: epoch, alarm and every entry. */
export async function stateOf(store: DurabilityStore, ref: InstanceRef): Promise<Record<string, unknown>> {
  return { epoch: await store.epochOf(ref), alarm: await store.getAlarm(ref), entries: await store.list(ref) };
}
