import {
  compareEpochs,
  type DurabilityStore,
  type InstanceRef,
  type ListOptions,
  StaleEpochError,
} from "./durability.ts";
import { checkKey, checkKeys, checkListOptions, serialiseEntries } from "./storage-limits.ts";
import { BufferedTransaction } from "./transaction.ts";
import type { InstanceStorage, Transaction } from "./types.ts";

/**
 * How storage calls pass the activation's gates: a read waits at the input gate; a write also
 * goes through the output gate, which holds answers until it is durable. `write` returns the
 * write with its rejection handled, so a put nobody awaits never crashes the process: its
 * failure reaches the caller's answer through the output gate instead. `hold` keeps the input
 * gate for a whole transaction.
 */
export interface StorageGates {
  read<T>(op: () => Promise<T>): Promise<T>;
  write<T>(op: () => Promise<T>): Promise<T>;
  hold<T>(fn: () => Promise<T>): Promise<T>;
}

/** No gates: each call runs as it comes (a store used outside an activation, tests). */
export const UNGATED: StorageGates = {
  read: (op) => op(),
  write: (op) => quiet(op()),
  hold: (fn) => fn(),
};

export interface StorageHooks {
  onStale(err: StaleEpochError): void;
  afterDeleteAll(): void;
  /** A call refused by the limits (it changed nothing): logged, so a put nobody awaited is not lost silently. */
  onRefused?(err: Error): void;
}

/**
 * ctx.storage: JSON values over a DurabilityStore, every write quoting the instance's
 * activation epoch. A fenced write calls `onStale` (the worker evicts the instance) and rejects;
 * deleteAll also drops the alarm, so the local timer hears of it through `afterDeleteAll`.
 * The limits (storage-limits.ts) are checked before a call reaches the gates: a refused call
 * rejects at once and changes nothing.
 */
export class EpochStorage implements InstanceStorage {
  constructor(
    private readonly store: DurabilityStore,
    private readonly ref: InstanceRef,
    private readonly epoch: string,
    private readonly hooks: StorageHooks,
    private readonly gates: StorageGates = UNGATED,
  ) {}

  /**
   * Reads are fenced too: the stored epoch is read just after the values (same connection, same
   * slot), and a higher one means another activation has claimed the instance, so what this one
   * would answer may already be stale. Without it, an activation that a late link let claim the
   * instance first answers reads beside the newer owner, which only writes would ever notice.
   */
  private read<T>(op: () => Promise<T>): Promise<T> {
    return this.gates.read(async () => {
      const [value, stored] = await Promise.all([op(), this.store.epochOf(this.ref)]);
      if (stored !== null && compareEpochs(stored, this.epoch) > 0) {
        const err = new StaleEpochError(this.epoch, stored);
        this.hooks.onStale(err);
        throw err;
      }
      return value;
    });
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

  /** Runs the limit checks of a call; a refusal rejects (handled, logged) without touching the store. */
  private checked<T>(check: () => void, call: () => Promise<T>): Promise<T> {
    try {
      check();
    } catch (err) {
      this.hooks.onRefused?.(err as Error);
      return quiet(Promise.reject(err));
    }
    return call();
  }

  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  get<T>(keyOrKeys: string | string[]): Promise<T | undefined | Map<string, T>> {
    const many = Array.isArray(keyOrKeys);
    const keys = many ? keyOrKeys : [keyOrKeys];
    return this.checked(
      () => (many ? checkKeys("storage.get", keys) : checkKey("storage.get", keyOrKeys)),
      () =>
        this.read(async () => {
          const values = await this.store.get(this.ref, keys);
          if (!many) return parse<T>(values[0]);
          const out = new Map<string, T>();
          keys.forEach((key, i) => {
            const value = parse<T>(values[i]);
            if (value !== undefined) out.set(key, value);
          });
          return out;
        }),
    );
  }

  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  put<T>(keyOrEntries: string | Record<string, T>, value?: T): Promise<void> {
    let entries: [string, string][] = [];
    return this.checked(
      () => {
        entries = serialiseEntries("storage.put", keyOrEntries, value);
      },
      () => this.write(() => this.store.put(this.ref, this.epoch, entries)),
    );
  }

  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  delete(keyOrKeys: string | string[]): Promise<boolean | number> {
    const many = Array.isArray(keyOrKeys);
    const keys = many ? keyOrKeys : [keyOrKeys];
    return this.checked(
      () => (many ? checkKeys("storage.delete", keys) : checkKey("storage.delete", keyOrKeys)),
      () =>
        this.write(async () => {
          const count = keys.length ? await this.store.delete(this.ref, this.epoch, keys) : 0;
          return many ? count : count > 0;
        }),
    );
  }

  list<T = unknown>(options?: ListOptions): Promise<Map<string, T>> {
    return this.checked(
      () => checkListOptions("storage.list", options),
      () =>
        this.read(async () => {
          const entries = await this.store.list(this.ref, options);
          return new Map(entries.map(([k, v]) => [k, JSON.parse(v) as T]));
        }),
    );
  }

  deleteAll(): Promise<void> {
    return this.write(async () => {
      await this.store.deleteAll(this.ref, this.epoch);
      this.hooks.afterDeleteAll();
    });
  }

  /**
   * Runs `closure` with the input gate held throughout (no other event of the instance runs in
   * between), then applies its writes in one store call, all or nothing.
   */
  transaction<T>(closure: (txn: Transaction) => Promise<T>): Promise<T> {
    return this.gates.hold(async () => {
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
    });
  }
}

/** The promise, its rejection marked handled: the caller may await it or not. */
function quiet<T>(promise: Promise<T>): Promise<T> {
  promise.catch(() => {});
  return promise;
}

function parse<T>(raw: string | null | undefined): T | undefined {
  return raw === null || raw === undefined ? undefined : (JSON.parse(raw) as T);
}
