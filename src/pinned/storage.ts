import { type DurabilityStore, type InstanceRef, type ListOptions, StaleEpochError } from "./durability.ts";
import type { InstanceStorage } from "./types.ts";

/**
 * How storage calls pass the activation's gates: a read waits at the input gate; a write also
 * goes through the output gate, which holds answers until it is durable. `write` returns the
 * write with its rejection handled, so a put nobody awaits never crashes the process: its
 * failure reaches the caller's answer through the output gate instead.
 */
export interface StorageGates {
  read<T>(op: () => Promise<T>): Promise<T>;
  write<T>(op: () => Promise<T>): Promise<T>;
}

/** No gates: each call runs as it comes (a store used outside an activation, tests). */
export const UNGATED: StorageGates = {
  read: (op) => op(),
  write: (op) => {
    const write = op();
    write.catch(() => {});
    return write;
  },
};

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
    private readonly gates: StorageGates = UNGATED,
  ) {}

  private read<T>(op: () => Promise<T>): Promise<T> {
    return this.gates.read(op);
  }

  private write<T>(op: () => Promise<T>): Promise<T> {
    return this.gates.write(async () => {
      try {
        return await op();
      } catch (err) {
        if (err instanceof StaleEpochError) this.hooks.onStale(err);
        throw err;
      }
    });
  }

  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  get<T>(keyOrKeys: string | string[]): Promise<T | undefined | Map<string, T>> {
    const keys = Array.isArray(keyOrKeys) ? keyOrKeys : [keyOrKeys];
    return this.read(async () => {
      const values = await this.store.get(this.ref, keys);
      if (!Array.isArray(keyOrKeys)) return parse<T>(values[0]);
      const out = new Map<string, T>();
      keys.forEach((key, i) => {
        const value = parse<T>(values[i]);
        if (value !== undefined) out.set(key, value);
      });
      return out;
    });
  }

  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  put<T>(keyOrEntries: string | Record<string, T>, value?: T): Promise<void> {
    return this.write(async () => {
      const entries: [string, string][] =
        typeof keyOrEntries === "string"
          ? [[keyOrEntries, serialise(keyOrEntries, value)]]
          : Object.entries(keyOrEntries).map(([k, v]) => [k, serialise(k, v)]);
      await this.store.put(this.ref, this.epoch, entries);
    });
  }

  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  delete(keyOrKeys: string | string[]): Promise<boolean | number> {
    const keys = Array.isArray(keyOrKeys) ? keyOrKeys : [keyOrKeys];
    return this.write(async () => {
      const count = keys.length ? await this.store.delete(this.ref, this.epoch, keys) : 0;
      return Array.isArray(keyOrKeys) ? count : count > 0;
    });
  }

  list<T = unknown>(options?: ListOptions): Promise<Map<string, T>> {
    return this.read(async () => {
      const entries = await this.store.list(this.ref, options);
      return new Map(entries.map(([k, v]) => [k, JSON.parse(v) as T]));
    });
  }

  deleteAll(): Promise<void> {
    return this.write(async () => {
      await this.store.deleteAll(this.ref, this.epoch);
      this.hooks.afterDeleteAll();
    });
  }
}

function parse<T>(raw: string | null | undefined): T | undefined {
  return raw === null || raw === undefined ? undefined : (JSON.parse(raw) as T);
}

function serialise(key: string, value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined)
    throw new TypeError(`storage.put(${JSON.stringify(key)}): the value is not JSON-serialisable`);
  return text;
}
