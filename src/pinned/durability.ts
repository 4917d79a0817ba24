/**
 * The durability store: where instances keep state that must outlive a worker. Values are
 * opaque strings here (the instance storage API serialises them as JSON). Every write quotes
 * the placement epoch of the writer and is fenced: a write at an epoch lower than the epoch
 * stored for the instance fails with StaleEpochError and changes nothing; a write at a higher
 * one raises the stored epoch first.
 */

export interface InstanceRef {
  ns: string;
  id: string;
}

export interface ListOptions {
  /** Only keys starting with this prefix. */
  prefix?: string | undefined;
  /** First key (inclusive). */
  start?: string | undefined;
  /** Key to stop before (exclusive). */
  end?: string | undefined;
  /** Newest-first, i.e. descending key order. */
  reverse?: boolean | undefined;
  limit?: number | undefined;
}

/**
 * One write of a committed transaction: a value to store under the key, or null to delete it.
 * A commit names each key at most once (the transaction keeps only its last write of a key).
 */
export type StorageWrite = [key: string, value: string | null];

export interface ActivateInfo {
  /** The worker's hostname (hostname-aware mode), recorded in the sweeper's index. */
  hostname?: string | undefined;
}

export interface ActivateResult {
  /** The stored alarm, due time in ms, or null. */
  alarm: number | null;
}

export interface DurabilityStore {
  /**
   * Claims the instance at `epoch`: raises the stored epoch when `epoch` is higher, accepts an
   * equal one, throws StaleEpochError when the stored epoch is higher. Also lists the instance
   * in the sweeper's index.
   */
  activate(ref: InstanceRef, epoch: string, info?: ActivateInfo): Promise<ActivateResult>;
  get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]>;
  /** Entries in ascending key order (descending with `reverse`). */
  list(ref: InstanceRef, options?: ListOptions): Promise<[string, string][]>;
  put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void>;
  /** Returns how many of the keys existed. */
  delete(ref: InstanceRef, epoch: string, keys: string[]): Promise<number>;
  /**
   * Applies a transaction's writes (puts and deletes, each key once) all or nothing, fenced like
   * put: a stale epoch throws StaleEpochError and changes nothing.
   */
  commit(ref: InstanceRef, epoch: string, writes: StorageWrite[]): Promise<void>;
  /** Drops every key and the alarm, and the instance's index entries. */
  deleteAll(ref: InstanceRef, epoch: string): Promise<void>;
  setAlarm(ref: InstanceRef, epoch: string, atMs: number | null): Promise<void>;
  getAlarm(ref: InstanceRef): Promise<number | null>;
  /** Clears the alarm only while it is still `expectedAtMs`; true when it did. */
  clearAlarm(ref: InstanceRef, epoch: string, expectedAtMs: number): Promise<boolean>;
  /** The stored epoch, or null for an instance never activated. */
  epochOf(ref: InstanceRef): Promise<string | null>;
  close?(): Promise<void>;
  /** Where the store is, for messages: a URL without its password. */
  readonly name?: string | undefined;
  /** Why the store cannot be reached right now (e.g. "ECONNREFUSED"), if it knows. */
  readonly lastError?: string | undefined;
}

/**
 * The durability store did not answer: unreachable, or no answer within the activation timeout.
 * The message names the store (password redacted) and the cause.
 */
export class DurabilityUnavailableError extends Error {
  constructor(
    readonly store: string,
    readonly reason: string,
    cause?: unknown,
  ) {
    super(`durability store ${store}: ${reason}`, { cause });
    this.name = "DurabilityUnavailableError";
  }
}

/** A write or activation quoted an epoch lower than the instance's stored epoch. */
export class StaleEpochError extends Error {
  constructor(
    readonly quoted: string,
    readonly stored: string,
  ) {
    super(`stale placement epoch ${quoted}: the instance is held at epoch ${stored}`);
    this.name = "StaleEpochError";
  }
}

/** Compares two decimal epoch strings of any length (they may exceed 2^53). */
export function compareEpochs(a: string, b: string): -1 | 0 | 1 {
  const x = BigInt(a);
  const y = BigInt(b);
  return x < y ? -1 : x > y ? 1 : 0;
}

export function isEpoch(value: string | null | undefined): value is string {
  return typeof value === "string" && /^\d+$/.test(value);
}

/** Sorts and slices entries the way ListOptions asks (shared by the memory store and tests). */
export function applyListOptions(entries: [string, string][], options: ListOptions = {}): [string, string][] {
  let out = entries.filter(([key]) => keyInRange(key, options));
  out.sort(([a], [b]) => compareKeys(a, b));
  if (options.reverse) out.reverse();
  if (options.limit !== undefined) out = out.slice(0, Math.max(0, options.limit));
  return out;
}

/** Whether a key passes the prefix, start and end of ListOptions (reverse and limit aside). */
export function keyInRange(key: string, options: ListOptions): boolean {
  if (options.prefix !== undefined && !key.startsWith(options.prefix)) return false;
  if (options.start !== undefined && compareKeys(key, options.start) < 0) return false;
  if (options.end !== undefined && compareKeys(key, options.end) >= 0) return false;
  return true;
}

/** Orders storage keys by code point, which is UTF-8 byte order: the order Redis BYLEX uses. */
export function compareKeys(a: string, b: string): number {
  const x = a[Symbol.iterator]();
  const y = b[Symbol.iterator]();
  for (;;) {
    const p = x.next();
    const q = y.next();
    if (p.done || q.done) return p.done && q.done ? 0 : p.done ? -1 : 1;
    const d = p.value.codePointAt(0)! - q.value.codePointAt(0)!;
    if (d !== 0) return d;
  }
}
