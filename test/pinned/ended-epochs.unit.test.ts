import { describe, expect, it } from "vitest";
import type { InstanceRef } from "../../src/pinned/durability.ts";
import { StaleEpochError } from "../../src/pinned/durability.ts";
import { EndedEpochs } from "../../src/pinned/ended-epochs.ts";
import { ActivationError, InstanceTable, RefusedError } from "../../src/pinned/instance-table.ts";
import { MemoryDurabilityStore } from "../../src/pinned/memory-durability.ts";
import { memoryLogger } from "../support/local-worker.ts";

/**
 * An activation retired on a worker is not created again at its epoch: Pinboard may have placed
 * the instance elsewhere meanwhile (the in-band refusal that released it, a lapse, a wind-down),
 * and a fresh activation at the old epoch would answer from memory beside the new owner. Only a
 * failure to activate or to write leaves the epoch open. Numbers written out: 5 minutes, 100,000.
 */

describe("EndedEpochs", () => {
  it("covers the ended epoch and every lower one, never a higher one, and keeps the highest", () => {
    const ended = new EndedEpochs(() => 0);
    ended.end("/n/a", 7n);
    expect(ended.ended("/n/a", 7n)).toBe(true);
    expect(ended.ended("/n/a", 6n)).toBe(true);
    expect(ended.ended("/n/a", 8n)).toBe(false);
    expect(ended.ended("/n/b", 1n)).toBe(false);
    ended.end("/n/a", 5n); // a lower epoch ending later does not reopen 6 and 7
    expect(ended.ended("/n/a", 7n)).toBe(true);
  });

  it("forgets an ended epoch 5 minutes after it ended", () => {
    const clock = { ms: 1_000 };
    const ended = new EndedEpochs(() => clock.ms);
    ended.end("/n/a", 5n);
    clock.ms = 1_000 + 299_999;
    expect(ended.ended("/n/a", 5n)).toBe(true);
    clock.ms = 1_000 + 300_000;
    expect(ended.ended("/n/a", 5n)).toBe(false);
    ended.end("/n/b", 1n); // recording another forgets the old entries
    expect(ended.size).toBe(1);
  });

  it("remembers at most 100,000 instances, the oldest forgotten first", () => {
    const ended = new EndedEpochs(() => 0);
    for (let i = 0; i < 100_000; i++) ended.end(`/n/${i}`, 1n);
    expect(ended.size).toBe(100_000);
    ended.end("/n/0", 2n); // recorded again: now the newest
    ended.end("/n/new", 1n);
    expect(ended.size).toBe(100_000);
    expect(ended.ended("/n/1", 1n)).toBe(false);
    expect(ended.ended("/n/0", 2n)).toBe(true);
    expect(ended.ended("/n/2", 1n)).toBe(true);
  });
});

class Plain {
  async fetch(): Promise<Response> {
    return new Response("ok");
  }
}

/** A memory store whose next activation can be made to fail, as an unreachable store would. */
class FlakyStore extends MemoryDurabilityStore {
  failNextActivation = false;
  override async activate(ref: InstanceRef, epoch: string) {
    if (this.failNextActivation) {
      this.failNextActivation = false;
      throw new Error("store unreachable");
    }
    return super.activate(ref, epoch);
  }
}

function table(store = new MemoryDurabilityStore()) {
  return new InstanceTable({
    classes: new Map([["/n", Plain]]),
    store,
    maxInstances: 10,
    refusal: () => null,
    lapsed: () => false,
    log: memoryLogger(),
    now: Date.now,
  });
}

async function enter(t: InstanceTable, epoch: string) {
  const live = await t.acquire("/n", "a", epoch);
  live.leave();
  return live;
}

describe("the instance table after a retirement", () => {
  it("refuses a forward at a retired activation's epoch (epoch-ended), and serves a newer one", async () => {
    const t = table();
    const live = await enter(t, "5");
    t.retire(live);
    await expect(t.acquire("/n", "a", "5")).rejects.toEqual(new RefusedError("epoch-ended"));
    await expect(t.acquire("/n", "a", "4")).rejects.toEqual(new RefusedError("epoch-ended"));
    expect(t.get("/n", "a")).toBeUndefined();
    const newer = await enter(t, "6");
    expect(newer.epoch).toBe("6");
  });

  it("keeps an epoch a newer activation replaced closed after that one is retired too", async () => {
    const t = table();
    await enter(t, "5");
    const newer = await enter(t, "6");
    await expect(t.acquire("/n", "a", "5")).rejects.toBeInstanceOf(StaleEpochError);
    t.retire(newer);
    await expect(t.acquire("/n", "a", "5")).rejects.toEqual(new RefusedError("epoch-ended"));
    await expect(t.acquire("/n", "a", "6")).rejects.toEqual(new RefusedError("epoch-ended"));
  });

  it("lets the same epoch activate again after an activation that failed", async () => {
    const store = new FlakyStore();
    const t = table(store);
    store.failNextActivation = true;
    await expect(t.acquire("/n", "a", "5")).rejects.toBeInstanceOf(ActivationError);
    const again = await enter(t, "5");
    expect(again.state).toBe("active");
  });

  it("closes an epoch the store fenced at activation", async () => {
    const store = new MemoryDurabilityStore();
    await store.activate({ ns: "/n", id: "a" }, "9");
    const t = table(store);
    await expect(t.acquire("/n", "a", "5")).rejects.toBeInstanceOf(StaleEpochError);
    await expect(t.acquire("/n", "a", "5")).rejects.toEqual(new RefusedError("epoch-ended"));
  });
});
