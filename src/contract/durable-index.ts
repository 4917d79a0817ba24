import { isId, isWorkerNamespace } from "./names.ts";

/**
 * Key names and member encodings of the worker library's Redis durability store. Pinboard's
 * sweeper reads the same index to find durable instances and due alarms; this file is the one
 * definition of the format (docs/durable-index.md explains it in prose).
 *
 * Every key of one instance carries the hash tag `{ns/id}`, so one Lua script can fence a write
 * across them on Redis Cluster. The two index keys share the `{pinned-index}` tag; they are
 * written by separate commands (never in the same script as an instance key, which would cross
 * slots).
 */

export const DEFAULT_DURABLE_PREFIX = "pinned:";

/**
 * The index member of an instance: `{ns}/{id}`, e.g. `/counter/abc` (the same shape as the
 * Pinboard-From header). Unambiguous because an id never contains `/`.
 */
export function instanceMember(ns: string, id: string): string {
  return `${ns}/${id}`;
}

/** The inverse of instanceMember; null for a string that is not a member. */
export function parseInstanceMember(member: string): { ns: string; id: string } | null {
  const slash = member.lastIndexOf("/");
  if (slash <= 0) return null;
  const ns = member.slice(0, slash);
  const id = member.slice(slash + 1);
  if (!isWorkerNamespace(ns) || !isId(id)) return null;
  return { ns, id };
}

export class DurableKeys {
  constructor(readonly prefix: string = DEFAULT_DURABLE_PREFIX) {
    if (/[{}\s]/.test(prefix)) throw new Error("a durable key prefix may not contain braces or whitespace");
  }

  private instance(ns: string, id: string, name: string): string {
    return `${this.prefix}{${instanceMember(ns, id)}}:${name}`;
  }

  /** Hash: epoch (decimal string), alarm (due time in ms, absent when unset), hostname. */
  meta(ns: string, id: string): string {
    return this.instance(ns, id, "meta");
  }
  /** Hash: storage key → JSON value. */
  data(ns: string, id: string): string {
    return this.instance(ns, id, "data");
  }
  /** Sorted set of storage keys, all scored 0, for ordered range listing (ZRANGE BYLEX). */
  keys(ns: string, id: string): string {
    return this.instance(ns, id, "keys");
  }

  /** Hash: instance member → hostname of the worker that last activated it ("" when unknown). */
  get instances(): string {
    return `${this.prefix}{pinned-index}:instances`;
  }
  /** Sorted set: instance member scored by its alarm's due time in ms. A superset of due alarms. */
  get alarms(): string {
    return `${this.prefix}{pinned-index}:alarms`;
  }
}
