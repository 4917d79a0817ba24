import { instanceMember } from "../contract/durable-index.ts";
import {
  type ActivateInfo,
  type ActivateResult,
  applyListOptions,
  compareEpochs,
  type DurabilityStore,
  type InstanceRef,
  type ListOptions,
  StaleEpochError,
  type StorageWrite,
} from "./durability.ts";

interface StoredInstance {
  epoch: string | null;
  alarm: number | null;
  hostname: string;
  data: Map<string, string>;
}

/**
 * A DurabilityStore in process memory, with the same fencing as the Redis one. For unit tests
 * and single-process use; it is also the default store of a worker configured without one, so
 * ctx.storage always works, but nothing survives the process.
 */
export class MemoryDurabilityStore implements DurabilityStore {
  private readonly records = new Map<string, StoredInstance>();

  private record(ref: InstanceRef): StoredInstance {
    const member = instanceMember(ref.ns, ref.id);
    let record = this.records.get(member);
    if (!record) {
      record = { epoch: null, alarm: null, hostname: "", data: new Map() };
      this.records.set(member, record);
    }
    return record;
  }

  private fence(record: StoredInstance, epoch: string): void {
    if (record.epoch !== null) {
      const order = compareEpochs(epoch, record.epoch);
      if (order < 0) throw new StaleEpochError(epoch, record.epoch);
      if (order === 0) return;
    }
    record.epoch = epoch;
  }

  async activate(ref: InstanceRef, epoch: string, info: ActivateInfo = {}): Promise<ActivateResult> {
    const record = this.record(ref);
    this.fence(record, epoch);
    if (info.hostname) record.hostname = info.hostname;
    return { alarm: record.alarm };
  }

  async get(ref: InstanceRef, keys: string[]): Promise<(string | null)[]> {
    const data = this.records.get(instanceMember(ref.ns, ref.id))?.data;
    return keys.map((key) => data?.get(key) ?? null);
  }

  async list(ref: InstanceRef, options?: ListOptions): Promise<[string, string][]> {
    const data = this.records.get(instanceMember(ref.ns, ref.id))?.data;
    return data ? applyListOptions([...data.entries()], options) : [];
  }

  async put(ref: InstanceRef, epoch: string, entries: [string, string][]): Promise<void> {
    const record = this.record(ref);
    this.fence(record, epoch);
    for (const [key, value] of entries) record.data.set(key, value);
  }

  async commit(ref: InstanceRef, epoch: string, writes: StorageWrite[]): Promise<void> {
    const record = this.record(ref);
    this.fence(record, epoch);
    for (const [key, value] of writes) {
      if (value === null) record.data.delete(key);
      else record.data.set(key, value);
    }
  }

  async delete(ref: InstanceRef, epoch: string, keys: string[]): Promise<number> {
    const record = this.record(ref);
    this.fence(record, epoch);
    let count = 0;
    for (const key of new Set(keys)) if (record.data.delete(key)) count++;
    return count;
  }

  async deleteAll(ref: InstanceRef, epoch: string): Promise<void> {
    const record = this.record(ref);
    this.fence(record, epoch);
    record.data.clear();
    record.alarm = null;
  }

  async setAlarm(ref: InstanceRef, epoch: string, atMs: number | null): Promise<void> {
    const record = this.record(ref);
    this.fence(record, epoch);
    record.alarm = atMs === null ? null : Math.floor(atMs);
  }

  async getAlarm(ref: InstanceRef): Promise<number | null> {
    return this.records.get(instanceMember(ref.ns, ref.id))?.alarm ?? null;
  }

  async clearAlarm(ref: InstanceRef, epoch: string, expectedAtMs: number): Promise<boolean> {
    const record = this.record(ref);
    this.fence(record, epoch);
    if (record.alarm !== Math.floor(expectedAtMs)) return false;
    record.alarm = null;
    return true;
  }

  async epochOf(ref: InstanceRef): Promise<string | null> {
    return this.records.get(instanceMember(ref.ns, ref.id))?.epoch ?? null;
  }

  /** The instances with a stored alarm due at or before `nowMs` (the sweeper's view, for tests). */
  dueAlarms(nowMs: number): { ns: string; id: string; at: number }[] {
    const out: { ns: string; id: string; at: number }[] = [];
    for (const [member, record] of this.records) {
      if (record.alarm === null || record.alarm > nowMs) continue;
      const slash = member.lastIndexOf("/");
      out.push({ ns: member.slice(0, slash), id: member.slice(slash + 1), at: record.alarm });
    }
    return out.sort((a, b) => a.at - b.at);
  }
}
