import { type DurabilityStore, type InstanceRef, type ListOptions, StaleEpochError } from "./durability.ts";
import { checkKey, checkKeys, checkListOptions, serialiseEntries } from "./storage-limits.ts";
import { BufferedTransaction } from "./transaction.ts";
import type { InstanceStorage, Transaction } from "./types.ts";

/**
 * ctx.storage: JSON values over a DurabilityStore, every write quoting the instance's
 * activation epoch. A fenced write calls `onStale` (the worker evicts the instance) and rejects;
 * deleteAll also drops the alarm, so the local timer hears of it through `afterDeleteAll`.
 * Every store call goes through `read` or `write`; the limits (storage-limits.ts) are checked
 * before either.
 */
export class EpochStorage implements InstanceStorage {
  constructor(
    private readonly store: DurabilityStore,
    private readonly ref: InstanceRef,
    private readonly epoch: string,
    private readonly hooks: { onStale(err: StaleEpochError): void; afterDeleteAll(): void },
  ) {}

  private async write<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      if (err instanceof StaleEpochError) this.hooks.onStale(err);
      throw err;
    }
  }

  private read<T>(op: () => Promise<T>): Promise<T> {
    return op();
  }

  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  async get<T>(keyOrKeys: string | string[]): Promise<T | undefined | Map<string, T>> {
    if (Array.isArray(keyOrKeys)) {
      checkKeys("storage.get", keyOrKeys);
      const values = await this.read(() => this.store.get(this.ref, keyOrKeys));
      const out = new Map<string, T>();
      keyOrKeys.forEach((key, i) => {
        const raw = values[i];
        if (raw !== null && raw !== undefined) out.set(key, JSON.parse(raw) as T);
      });
      return out;
    }
    checkKey("storage.get", keyOrKeys);
    const [raw] = await this.read(() => this.store.get(this.ref, [keyOrKeys]));
    return raw === null || raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  async put<T>(keyOrEntries: string | Record<string, T>, value?: T): Promise<void> {
    const entries = serialiseEntries("storage.put", keyOrEntries, value);
    await this.write(() => this.store.put(this.ref, this.epoch, entries));
  }

  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  async delete(keyOrKeys: string | string[]): Promise<boolean | number> {
    const keys = Array.isArray(keyOrKeys) ? checkKeys("storage.delete", keyOrKeys) : [keyOrKeys];
    if (!Array.isArray(keyOrKeys)) checkKey("storage.delete", keyOrKeys);
    const count = keys.length ? await this.write(() => this.store.delete(this.ref, this.epoch, keys)) : 0;
    return Array.isArray(keyOrKeys) ? count : count > 0;
  }

  async list<T = unknown>(options?: ListOptions): Promise<Map<string, T>> {
    checkListOptions("storage.list", options);
    const entries = await this.read(() => this.store.list(this.ref, options));
    return new Map(entries.map(([k, v]) => [k, JSON.parse(v) as T]));
  }

  async deleteAll(): Promise<void> {
    await this.write(() => this.store.deleteAll(this.ref, this.epoch));
    this.hooks.afterDeleteAll();
  }

  async transaction<T>(closure: (txn: Transaction) => Promise<T>): Promise<T> {
    const txn = new BufferedTransaction({
      get: (keys) => this.read(() => this.store.get(this.ref, keys)),
      list: (options) => this.read(() => this.store.list(this.ref, options)),
    });
    let result: T;
    try {
      result = await closure(txn);
    } finally {
      txn.end();
    }
    const writes = txn.writes();
    if (txn.rolledBack || writes.length === 0) return result;
    await this.write(() => this.store.commit(this.ref, this.epoch, writes));
    return result;
  }
}
