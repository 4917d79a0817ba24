import type { ListOptions } from "./durability.ts";

/**
 * The limits of ctx.storage, checked before anything is sent to the durability store, so a call
 * that breaks one throws (rejects) and changes nothing. Each error names the call, the value and
 * the limit. NOTES-txn.md gives the reason for each figure.
 */

/** Keys in one get, put or delete call (Durable Objects' batch limit). */
export const MAX_KEYS_PER_CALL = 128;
/** Distinct keys one transaction writes (puts and deletes together). */
export const MAX_KEYS_PER_TRANSACTION = 128;
/** A key's size in UTF-8 bytes (Durable Objects' key limit). An empty key is refused too. */
export const MAX_KEY_BYTES = 2048;
/** A value's size as stored: the UTF-8 bytes of its JSON text. */
export const MAX_VALUE_BYTES = 1024 * 1024;

/** A storage call's name in messages: "storage.put", "transaction.get", … */
export type CallName = string;

export function checkKeyCount(call: CallName, count: number): void {
  if (count > MAX_KEYS_PER_CALL)
    throw new RangeError(`${call}: ${count} keys in one call; at most ${MAX_KEYS_PER_CALL} keys per call`);
}

export function checkKey(call: CallName, key: unknown): asserts key is string {
  if (typeof key !== "string") throw new TypeError(`${call}: key is ${describe(key)}; keys are strings`);
  if (key === "") throw new RangeError(`${call}: key is empty; keys are 1 to ${MAX_KEY_BYTES} bytes (UTF-8)`);
  // Stryker disable next-line StringLiteral: Buffer.byteLength's encoding defaults to UTF-8 when it is ""
  const bytes = Buffer.byteLength(key, "utf8");
  if (bytes > MAX_KEY_BYTES)
    throw new RangeError(`${call}: key is ${bytes} bytes; keys are at most ${MAX_KEY_BYTES} bytes (UTF-8)`);
}

/** Checks a get's or delete's keys (one, or an array of them). */
export function checkKeys(call: CallName, keys: unknown[]): string[] {
  checkKeyCount(call, keys.length);
  for (const key of keys) checkKey(call, key);
  return keys as string[];
}

/** A value's JSON text, checked to be JSON-serialisable and within MAX_VALUE_BYTES. */
export function serialiseValue(call: CallName, key: string, value: unknown): string {
  const text = JSON.stringify(value);
  if (text === undefined) throw new TypeError(`${call}(${quoted(key)}): the value is not JSON-serialisable`);
  // Each UTF-16 unit is at most 3 UTF-8 bytes: the exact count is only needed near the limit.
  // Stryker disable next-line EqualityOperator,ConditionalExpression: a fast path only; the exact count below gives the same answer
  if (text.length * 3 <= MAX_VALUE_BYTES) return text;
  // Stryker disable next-line StringLiteral: Buffer.byteLength's encoding defaults to UTF-8 when it is ""
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes > MAX_VALUE_BYTES)
    throw new RangeError(
      `${call}(${quoted(key)}): value is ${bytes} bytes as JSON; values are at most ${MAX_VALUE_BYTES} bytes (1 MiB)`,
    );
  return text;
}

/** Serialises a put's entries (one key and value, or a record of them), checking every limit. */
export function serialiseEntries(call: CallName, keyOrEntries: unknown, value: unknown): [string, string][] {
  if (typeof keyOrEntries === "string") {
    checkKey(call, keyOrEntries);
    return [[keyOrEntries, serialiseValue(call, keyOrEntries, value)]];
  }
  if (typeof keyOrEntries !== "object" || keyOrEntries === null || Array.isArray(keyOrEntries))
    throw new TypeError(
      `${call}: the first argument is ${describe(keyOrEntries)}; pass a key and a value, or a record of entries`,
    );
  const entries = Object.entries(keyOrEntries);
  checkKeyCount(call, entries.length);
  for (const [key] of entries) checkKey(call, key);
  return entries.map(([key, v]) => [key, serialiseValue(call, key, v)]);
}

export function checkListOptions(call: CallName, options: ListOptions | undefined): void {
  const limit = options?.limit;
  if (limit !== undefined && !(Number.isInteger(limit) && limit >= 0))
    throw new RangeError(`${call}: limit is ${String(limit)}; limit must be a non-negative integer`);
}

/** What a non-string key is, for a message: "null", "undefined", "a number", "an object". */
function describe(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  const type = typeof value;
  return `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
}

/** A key for a message: JSON-quoted, cut to 40 characters (keys may be 2 KiB). */
function quoted(key: string): string {
  return JSON.stringify(key.length > 40 ? `${key.slice(0, 40)}…` : key);
}
