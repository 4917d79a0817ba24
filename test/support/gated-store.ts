import type { InstanceRef } from "../../src/pinned/index.ts";
import { MemoryDurabilityStore } from "../../src/pinned/index.ts";
import type { Gate } from "./gates.ts";

/**
 * The memory store with its answers held where a test says: a `put` (or `get`) waits at
 * `putGate` (`getGate`) while one is set, and a put can be made to fail after it arrived. The
 * effect of a call happens when it is made, like a command on an ordered connection; only the
 * answer waits. So the gates decide when the instance hears back, not what the store holds.
 */
export class HeldMemoryStore extends MemoryDurabilityStore {
  getGate: Gate | null = null;
  putGate: Gate | null = null;
  /** The next put answers this error (after its gate, if any) instead of storing. */
  failNextPut: Error | null = null;
  gets = 0;
  puts = 0;

  override async get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]> {
    this.gets++;
    const values = await super.get(ref, keys);
    await this.getGate?.pass();
    return values;
  }

  override async put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void> {
    this.puts++;
    const failure = this.failNextPut;
    this.failNextPut = null;
    if (!failure) await super.put(ref, epoch, entries);
    await this.putGate?.pass();
    if (failure) throw failure;
  }
}

/** The memory store with every answer a little late (a macrotask), as a store across a network is. */
export class LateMemoryStore extends MemoryDurabilityStore {
  override async get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]> {
    const values = await super.get(ref, keys);
    await new Promise((resolve) => setTimeout(resolve, 1));
    return values;
  }

  override async put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void> {
    await super.put(ref, epoch, entries);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
}
