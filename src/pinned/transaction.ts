import { applyListOptions, keyInRange, type ListOptions, type StorageWrite } from "./durability.ts";
import { checkKey, checkKeys, checkListOptions, MAX_KEYS_PER_TRANSACTION, serialiseEntries } from "./storage-limits.ts";
import type { Transaction } from "./types.ts";

/** How a transaction reads the committed state (EpochStorage's read path, raw JSON strings). */
export interface CommittedReader {
  get(keys: string[]): Promise<(string | null)[]>;
  list(options: ListOptions): Promise<[string, string][]>;
}

/**
 * The `txn` of ctx.storage.transaction: writes are buffered (the last write of each key wins) and
 * reads see them over the committed state. Every call updates the buffer synchronously, before
 * its first await, so calls the closure does not await still apply in call order. Nothing reaches
 * the store from here: EpochStorage commits `writes()` in one call once the closure resolved.
 */
export class BufferedTransaction implements Transaction {
  /** key → JSON text to store, or null to delete. */
  private readonly buffer = new Map<string, string | null>();
  private state: "open" | "rolled back" | "ended" = "open";

  constructor(private readonly committed: CommittedReader) {}

  get rolledBack(): boolean {
    return this.state === "rolled back";
  }

  /** Called when the closure settled: later calls on `txn` throw. */
  end(): void {
    if (this.state === "open") this.state = "ended";
  }

  /** The buffered writes, each key once. */
  writes(): StorageWrite[] {
    return [...this.buffer.entries()];
  }

  rollback(): void {
    if (this.state === "ended") this.refuse("transaction.rollback");
    this.state = "rolled back";
  }

  get<T = unknown>(key: string): Promise<T | undefined>;
  get<T = unknown>(keys: string[]): Promise<Map<string, T>>;
  async get<T>(keyOrKeys: string | string[]): Promise<T | undefined | Map<string, T>> {
    this.ensureOpen("transaction.get");
    const keys = Array.isArray(keyOrKeys) ? checkKeys("transaction.get", keyOrKeys) : [keyOrKeys];
    if (!Array.isArray(keyOrKeys)) checkKey("transaction.get", keyOrKeys);
    const raw = await this.read(keys);
    if (!Array.isArray(keyOrKeys)) return raw[0] === null ? undefined : (JSON.parse(raw[0]!) as T);
    const out = new Map<string, T>();
    keys.forEach((key, i) => {
      if (raw[i] !== null) out.set(key, JSON.parse(raw[i]!) as T);
    });
    return out;
  }

  put<T>(key: string, value: T): Promise<void>;
  put<T>(entries: Record<string, T>): Promise<void>;
  async put<T>(keyOrEntries: string | Record<string, T>, value?: T): Promise<void> {
    this.ensureOpen("transaction.put");
    const entries = serialiseEntries("transaction.put", keyOrEntries, value);
    this.ensureRoom(
      "transaction.put",
      entries.map(([key]) => key),
    );
    for (const [key, text] of entries) this.buffer.set(key, text);
  }

  delete(key: string): Promise<boolean>;
  delete(keys: string[]): Promise<number>;
  async delete(keyOrKeys: string | string[]): Promise<boolean | number> {
    this.ensureOpen("transaction.delete");
    const keys = Array.isArray(keyOrKeys) ? checkKeys("transaction.delete", keyOrKeys) : [keyOrKeys];
    if (!Array.isArray(keyOrKeys)) checkKey("transaction.delete", keyOrKeys);
    this.ensureRoom("transaction.delete", keys);
    const unique = [...new Set(keys)];
    // What existed is read before the deletes are buffered; the buffer changes before any await.
    const existed = this.read(unique);
    for (const key of unique) this.buffer.set(key, null);
    const count = (await existed).filter((raw) => raw !== null).length;
    return Array.isArray(keyOrKeys) ? count : count > 0;
  }

  async list<T = unknown>(options: ListOptions = {}): Promise<Map<string, T>> {
    this.ensureOpen("transaction.list");
    checkListOptions("transaction.list", options);
    // Buffered keys in range shadow committed entries: each may hide one, so ask for that many more.
    const overlay = [...this.buffer.entries()].filter(([key]) => keyInRange(key, options));
    const { limit, ...range } = options;
    const asked = limit === undefined ? range : { ...range, limit: limit + overlay.length };
    const shadowed = new Set(overlay.map(([key]) => key));
    const committed = (await this.committed.list(asked)).filter(([key]) => !shadowed.has(key));
    for (const [key, text] of overlay) if (text !== null) committed.push([key, text]);
    return new Map(applyListOptions(committed, options).map(([k, v]) => [k, JSON.parse(v) as T]));
  }

  /** Values of `keys` as this transaction sees them: its own writes over the committed state. */
  private async read(keys: string[]): Promise<(string | null)[]> {
    const own = keys.map((key) => this.buffer.get(key));
    const missing = [...new Set(keys.filter((_, i) => own[i] === undefined))];
    const fetched = missing.length ? await this.committed.get(missing) : [];
    const found = new Map(missing.map((key, i) => [key, fetched[i] ?? null]));
    return keys.map((key, i) => (own[i] === undefined ? found.get(key)! : own[i]!));
  }

  /** Refuses a write that would take the transaction past MAX_KEYS_PER_TRANSACTION distinct keys. */
  private ensureRoom(call: string, keys: string[]): void {
    const added = new Set(keys.filter((key) => !this.buffer.has(key))).size;
    const total = this.buffer.size + added;
    if (total > MAX_KEYS_PER_TRANSACTION)
      throw new RangeError(
        `${call}: the transaction would write ${total} keys; a transaction writes at most ${MAX_KEYS_PER_TRANSACTION} keys`,
      );
  }

  private ensureOpen(call: string): void {
    if (this.state !== "open") this.refuse(call);
  }

  private refuse(call: string): never {
    throw new Error(
      this.state === "rolled back"
        ? `${call}: the transaction was rolled back; nothing of it is written, start another`
        : `${call}: the transaction has ended (its closure settled); use ctx.storage or a new transaction`,
    );
  }
}
