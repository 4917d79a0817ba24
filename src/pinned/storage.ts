import { type DurabilityStore, type InstanceRef, type ListOptions, StaleEpochError } from "./durability.ts";
import type { InstanceStorage } from "./types.ts";

/**
 * ctx.storage: JSON values over a DurabilityStore, every write quoting the instance's
 * activation epoch. A fenced write calls `onStale` (the worker evicts the instance) and rejects;
 * deleteAll also drops the alarm, so the local timer hears of it through `afterDeleteAll`.
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

  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  async get<T>(keyOrKeys: string | string[]): Promise<T | undefined | Map<string, T>> {
    if (Array.isArray(keyOrKeys)) {
      const values = await this.store.get(this.ref, keyOrKeys);
      const out = new Map<string, T>();
      keyOrKeys.forEach((key, i) => {
        const raw = values[i];
        if (raw !== null && raw !== undefined) out.set(key, JSON.parse(raw) as T);
      });
      return out;
    }
    const [raw] = await this.store.get(this.ref, [keyOrKeys]);
    return raw === null || raw === undefined ? undefined : (JSON.parse(raw) as T);
  }

  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  async put<T>(keyOrEntries: string | Record<string, T>, value?: T): Promise<void> {
    const entries: [string, string][] =
      typeof keyOrEntries === "string"
        ? [[keyOrEntries, serialise(keyOrEntries, value)]]
        : Object.entries(keyOrEntries).map(([k, v]) => [k, serialise(k, v)]);
    await this.write(() => this.store.put(this.ref, this.epoch, entries));
  }

  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  async delete(keyOrKeys: string | string[]): Promise<boolean | number> {
    const keys = Array.isArray(keyOrKeys) ? keyOrKeys : [keyOrKeys];
    const count = keys.length ? await this.write(() => this.store.delete(this.ref, this.epoch, keys)) : 0;
    return Array.isArray(keyOrKeys) ? count : count > 0;
  }

  async list<T = unknown>(options?: ListOptions): Promise<Map<string, T>> {
    const entries = await this.store.list(this.ref, options);
    return new Map(entries.map(([k, v]) => [k, JSON.parse(v) as T]));
  }

  async deleteAll(): Promise<void> {
    await this.write(() => this.store.deleteAll(this.ref, this.epoch));
    this.hooks.afterDeleteAll();
  }
}

function serialise(key: string, value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined)
    throw new TypeError(`storage.put(${JSON.stringify(key)}): the value is not JSON-serialisable`);
  return text;
}
